/* fleet lab stand-in for libcuda.so.1 (the CUDA driver API), a real shared object the real loader finds.
 *
 * Built twice over: as the host's own driver library (LAB_COMPAT=0, LAB_DRIVER = the profile's kernel
 * driver) and as cuda-compat's forward-compatibility library (LAB_COMPAT=1, LAB_DRIVER = 580.95.05).
 * cuInit() follows the real rules:
 *   - no /proc/driver/nvidia/version (no kernel driver)             -> 100 CUDA_ERROR_NO_DEVICE
 *   - driver library != kernel driver, not a compat library         -> 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
 *   - compat library on a GPU without forward compatibility        -> 804 CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
 *   - compat library on Jetson Thor (its r580 driver is not the one compat targets; NVIDIA container
 *     toolkit PR #1679)                                             -> 803
 *   - compat library not newer than the kernel driver               -> 803
 *   - an NVSwitch fabric not set up (fleet_lab/fabric.py): the host manages it and its fabric manager has not
 *     written /run/fleet-lab/fabric-ready, or a container whose provider's fabric is not ready
 *                                                                   -> 802 CUDA_ERROR_SYSTEM_NOT_READY
 *   - CUDA_VISIBLE_DEVICES leaving no GPU visible                    -> 100 CUDA_ERROR_NO_DEVICE
 * The GPUs are described by /proc/driver/nvidia/fleet-lab-gpu, a file the lab writes (gpus=8 on an HGX board;
 * off_fabric= the GPUs that failed to register with the fabric: no peer access to or from them).
 *
 * CUDA_VISIBLE_DEVICES as the real driver reads it (CUDA programming guide, "CUDA Environment Variables"; the
 * lent H200's answers in shared/captured/h200-device/visible.txt): unset, every GPU; set and empty, none; else a
 * comma-separated list of indices or UUIDs ("GPU-<uuid>", or any unique prefix of one), each making that GPU
 * visible in that order, and the list STOPS at the first entry that names no GPU (`0,-1,1` is GPU 0 alone, `1,0`
 * on a one-GPU host is none: cuInit 100). MIG names match no GPU here (no MIG in the lab). GPU i's UUID is GPU 0's
 * with its last two hex digits plus i, as the stand-in nvidia-smi lists them. */
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Where the lab host's /proc/driver/nvidia is; a unit test builds it with its own directory. */
#ifndef LAB_PROC
#define LAB_PROC "/proc/driver/nvidia"
#endif

#define NO_DEVICE 100
#define INVALID_VALUE 1
#define NOT_INITIALIZED 3
#define INVALID_DEVICE 101
#define SYSTEM_NOT_READY 802
#define SYSTEM_DRIVER_MISMATCH 803
#define FABRIC_STATE "/run/fleet-lab/fabric-ready"
#define COMPAT_NOT_SUPPORTED 804

#if LAB_COMPAT
const char fleet_lab_standin[] = "fleet lab stand-in libcuda " LAB_DRIVER " (cuda-compat)";
#else
const char fleet_lab_standin[] = "fleet lab stand-in libcuda " LAB_DRIVER;
#endif

static int initialized;
static char gpu_name[256], gpu_class[64], gpu_uuid[64], fabric[32], off_fabric[256];
static int gpus = 1;
static int cc_major, cc_minor;
static long long memory_mb;
static int visible[64], nvisible;  /* visible ordinal -> GPU index, from CUDA_VISIBLE_DEVICES */

static int version_cmp(const char *a, const char *b) {
    while (*a || *b) {
        long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
        if (x != y) return x < y ? -1 : 1;
        if (*a == '.') a++;
        if (*b == '.') b++;
    }
    return 0;
}

/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..." */
static int kernel_driver(char *out, size_t size) {
    FILE *f = fopen(LAB_PROC "/version", "r");
    char line[512];
    if (!f) return 0;
    int found = 0;
    if (fgets(line, sizeof line, f)) {
        char *p = strstr(line, "Module for ");
        if (p && (p = strchr(p + 11, ' '))) {
            while (*p == ' ') p++;
            size_t n = strcspn(p, " \n");
            if (n && n < size) { memcpy(out, p, n); out[n] = '\0'; found = 1; }
        }
    }
    fclose(f);
    return found;
}

static void read_gpu(void) {
    FILE *f = fopen(LAB_PROC "/fleet-lab-gpu", "r");
    char line[512];
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *value = strchr(line, '=');
        if (!value) continue;
        *value++ = '\0';
        if (!strcmp(line, "name")) snprintf(gpu_name, sizeof gpu_name, "%s", value);
        else if (!strcmp(line, "class")) snprintf(gpu_class, sizeof gpu_class, "%s", value);
        else if (!strcmp(line, "uuid")) snprintf(gpu_uuid, sizeof gpu_uuid, "%s", value);
        else if (!strcmp(line, "compute_cap")) sscanf(value, "%d.%d", &cc_major, &cc_minor);
        else if (!strcmp(line, "memory_mb")) memory_mb = atoll(value);
        else if (!strcmp(line, "gpus")) gpus = atoi(value);
        else if (!strcmp(line, "fabric")) snprintf(fabric, sizeof fabric, "%s", value);
        else if (!strcmp(line, "off_fabric")) snprintf(off_fabric, sizeof off_fabric, " %s ", value);
    }
    fclose(f);
}

static const char *uuid_of(int i) {   /* as fleet_lab/native/nvidia_smi.c's uuid_of */
    static char uuid[80];
    snprintf(uuid, sizeof uuid, "%s", gpu_uuid);
    size_t n = strlen(uuid);
    if (i && n > 2) snprintf(uuid + n - 2, 3, "%02x", (unsigned)((strtoul(uuid + n - 2, NULL, 16) + (unsigned)i) & 0xff));
    return uuid;
}

/* The GPU one CUDA_VISIBLE_DEVICES entry names, or -1 (an index out of range, -1, a UUID prefix matching no GPU
 * or more than one, anything else). */
static int named_gpu(const char *entry, size_t n) {
    char word[128];
    while (n && (*entry == ' ' || *entry == '\t')) { entry++; n--; }
    while (n && (entry[n - 1] == ' ' || entry[n - 1] == '\t')) n--;
    if (!n || n >= sizeof word) return -1;
    memcpy(word, entry, n); word[n] = '\0';
    if (strspn(word, "0123456789") == n) {
        long i = strtol(word, NULL, 10);
        return i < gpus ? (int)i : -1;
    }
    if (strncmp(word, "GPU-", 4) != 0) return -1;
    int found = -1;
    for (int i = 0; i < gpus; i++)
        if (!strncasecmp(uuid_of(i), word, n)) { if (found >= 0) return -1; found = i; }
    return found;
}

static void read_visible(void) {
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    nvisible = 0;
    if (!list) {
        for (int i = 0; i < gpus && i < 64; i++) visible[nvisible++] = i;
        return;
    }
    while (*list && nvisible < 64) {
        size_t n = strcspn(list, ",");
        int gpu = named_gpu(list, n);
        for (int k = 0; k < nvisible && gpu >= 0; k++) if (visible[k] == gpu) gpu = -1;  /* named twice: stops */
        if (gpu < 0) break;
        visible[nvisible++] = gpu;
        list += n;
        if (*list == ',') list++;
    }
}

/* CUDA release whose features this driver branch supports in full (CUDA release notes, table 3). */
int cuDriverGetVersion(int *version) {
    static const struct { int branch, cuda; } table[] = {
        {595, 13020}, {590, 13010}, {580, 13000}, {575, 12090}, {570, 12080}, {560, 12060},
        {555, 12050}, {550, 12040}, {545, 12030}, {535, 12020}, {530, 12010}, {525, 12000}};
    if (!version) return INVALID_VALUE;
    int branch = atoi(LAB_DRIVER);
    /* A Jetson's driver (the Tegra r540 of L4T R36) answers with its JetPack's CUDA, not the desktop table:
     * R36.4 (JetPack 6.1 and 6.2) ships CUDA 12.6, R36.2/R36.3 (JetPack 6.0) CUDA 12.2 (docs.nvidia.com/jetson/
     * jetpack/release-notes, as pytorch/TensorRT docsrc/getting_started/jetpack.rst and its PR #3453 quote them:
     * "JetPack 6.1 ... CUDA 12.6", "jetpack 6.2 has cuda: 12.6"; fleet/decide/jetson.py JETPACK_CUDA). */
    if (branch == 540) {
        const char *minor = strchr(LAB_DRIVER, '.');
        *version = (minor && atoi(minor + 1) >= 4) ? 12060 : 12020;
        return 0;
    }
    *version = 11080;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (branch >= table[i].branch) { *version = table[i].cuda; break; }
    return 0;
}

int cuInit(unsigned int flags) {
    char kernel[64];
    (void)flags;
    if (!kernel_driver(kernel, sizeof kernel)) return NO_DEVICE;
    read_gpu();
    if (!LAB_COMPAT) {
        if (version_cmp(kernel, LAB_DRIVER) != 0) return SYSTEM_DRIVER_MISMATCH;
    } else {
        if (!strcmp(gpu_class, "jetson-thor")) return SYSTEM_DRIVER_MISMATCH;
        if (strcmp(gpu_class, "datacenter") != 0) return COMPAT_NOT_SUPPORTED;
        if (version_cmp(kernel, LAB_DRIVER) >= 0) return SYSTEM_DRIVER_MISMATCH;
    }
    if (!strcmp(fabric, "provider")) return SYSTEM_NOT_READY;   /* the provider's fabric manager: not here */
    if (!strcmp(fabric, "managed") && access(FABRIC_STATE, F_OK) != 0) return SYSTEM_NOT_READY;
    read_visible();
    if (!gpu_name[0] || !nvisible) return NO_DEVICE;
    initialized = 1;
    return 0;
}

int cuDeviceGetCount(int *count) {
    if (!initialized) return NOT_INITIALIZED;
    *count = nvisible;
    return 0;
}

int cuDeviceGet(int *device, int ordinal) {
    if (!initialized) return NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= nvisible) return INVALID_DEVICE;
    *device = ordinal;
    return 0;
}

int cuDeviceGetName(char *name, int len, int device) {
    if (!initialized) return NOT_INITIALIZED;
    if (device < 0 || device >= nvisible) return INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", gpu_name);
    return 0;
}

/* 75 = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 76 = ..._MINOR */
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    if (!initialized) return NOT_INITIALIZED;
    if (device < 0 || device >= nvisible) return INVALID_DEVICE;
    if (attribute == 75) *value = cc_major;
    else if (attribute == 76) *value = cc_minor;
    else return INVALID_VALUE;
    return 0;
}

int cuDeviceTotalMem_v2(size_t *bytes, int device) {
    if (!initialized) return NOT_INITIALIZED;
    if (device < 0 || device >= nvisible) return INVALID_DEVICE;
    *bytes = (size_t)memory_mb * 1024 * 1024;
    return 0;
}

static int on_fabric(int device) {
    char word[16];
    snprintf(word, sizeof word, " %d ", device);
    return strstr(off_fabric, word) == NULL;
}

/* Peer access over NVLink: both GPUs on the fabric (a GPU that failed to register has lost its peers). */
int cuDeviceCanAccessPeer(int *can, int device, int peer) {
    if (!initialized) return NOT_INITIALIZED;
    if (!can) return INVALID_VALUE;
    if (device < 0 || device >= nvisible || peer < 0 || peer >= nvisible) return INVALID_DEVICE;
    *can = device != peer && on_fabric(visible[device]) && on_fabric(visible[peer]);
    return 0;
}

static const struct { int code; const char *name, *text; } errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
};

static int error_index(int code) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code) return (int)i;
    return -1;
}

int cuGetErrorString(int code, const char **text) {
    int i = error_index(code);
    if (i < 0) return INVALID_VALUE;
    *text = errors[i].text;
    return 0;
}

int cuGetErrorName(int code, const char **name) {
    int i = error_index(code);
    if (i < 0) return INVALID_VALUE;
    *name = errors[i].name;
    return 0;
}
