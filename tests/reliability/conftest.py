"""The reliability suite (issue 16): see README.md here. Shares the unit tests' resource runner."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
