"""The minimum-driver table (shared/DOMAIN.md) and version comparison."""

import pytest

from fleet.knowledge import cuda_table


@pytest.mark.parametrize("driver, cuda", [
    ("570.133.20", "12.8"),   # the 570 pod
    ("580.159.04", "13.0"),   # the real H100
    ("580.95.05", "13.0"),    # the Spark
    ("580.65.06", "13.0"),    # exactly the minimum
    ("580.65.05", "12.9"),    # one patch short
    ("570.26", "12.8"),
    ("565.57.01", "12.6"),    # between 12.6 and 12.8: there is no 12.7
    ("525.60.13", "12.0"),
    ("525.60.12", None),      # older than the table: CUDA 11.x
    ("470.82.01", None),
    ("595.45.04", "13.2"),
    ("610.1", "13.2"),        # newer than this copy of the table: its newest entry
    (None, None), ("[N/A]", None), ("", None),
])
def test_cuda_max_for_driver(driver, cuda):
    assert cuda_table.cuda_max_for_driver(driver) == cuda


def test_min_driver_for():
    assert cuda_table.min_driver_for("13.0") == "580.65.06"
    assert cuda_table.min_driver_for("13.0.2") == "580.65.06"
    assert cuda_table.min_driver_for("12.8") == "570.26"
    assert cuda_table.min_driver_for("12.7") is None
    assert cuda_table.min_driver_for("11.8") is None


def test_compare_versions_numeric_not_textual():
    assert cuda_table.compare_versions("570.26", "570.133.20") == -1
    assert cuda_table.compare_versions("580.159.04", "580.65.06") == 1
    assert cuda_table.compare_versions("13.0", "13.0.0") == 0
    with pytest.raises(ValueError):
        cuda_table.version_key("580.xx")


def test_table_is_ordered_by_driver_too():
    """A newer CUDA never needs an older driver: the table has no transcription slip."""
    releases = cuda_table.cuda_releases()
    drivers = [cuda_table.MIN_DRIVER[r] for r in releases]
    assert all(cuda_table.compare_versions(a, b) < 0 for a, b in zip(drivers, drivers[1:]))
    assert "12.7" not in releases
