/* fleet lab stand-in for nvidia-smi: NOT NVIDIA's. It answers from what the lab host exposes:
 * the kernel driver in /proc/driver/nvidia/version, the GPU in /proc/driver/nvidia/fleet-lab-gpu, and
 * the "CUDA Version" of whichever libcuda.so.1 the loader finds (as the real one does).
 *
 * It fails through the real mechanisms:
 * - NVML "Driver/library version mismatch" (exit 18, NVML_ERROR_LIB_RM_VERSION_MISMATCH) when the user-space
 *   driver library in the driver's directory (libcuda.so.1 -> libcuda.so.<version>) is not the kernel
 *   module's version: what an unattended driver upgrade under a loaded module leaves.
 * - Compute processes are the processes holding a lab GPU handle open: a file under /run/fleet-lab/gpu-jobs/
 *   whose content is the MiB it holds (as the real one lists the processes with /dev/nvidia* contexts).
 *
 * A compiled program, as NVIDIA's is: fleet's facts probe runs it twice per host on every apply, and a
 * Python stand-in's interpreter start-up (40-70 ms a call on a 2-core machine) was a third of a lab host's
 * no-op probe (issue 14), a cost the real C binary does not have. Built by fleet_lab/native.py
 * (build_program) into the mirror's native/bin/nvidia-smi; the profile layer puts it at /usr/bin/nvidia-smi. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const DRIVER_LIBS[] = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/nvidia/libcuda.so.1"};
#define JOBS "/run/fleet-lab/gpu-jobs/"
#define GPU_FILE "/proc/driver/nvidia/fleet-lab-gpu"
#define N(array) (sizeof array / sizeof array[0])

static const struct { const char *name, *header, *unit; } FIELDS[] = {  /* query field, csv header, unit */
    {"index", "index", NULL}, {"name", "name", NULL}, {"driver_version", "driver_version", NULL},
    {"compute_cap", "compute_cap", NULL}, {"memory.total", "memory.total [MiB]", "MiB"},
    {"memory.used", "memory.used [MiB]", "MiB"}, {"memory.free", "memory.free [MiB]", "MiB"},
    {"uuid", "uuid", NULL}, {"pci.bus_id", "pci.bus_id", NULL}, {"temperature.gpu", "temperature.gpu", NULL},
    {"utilization.gpu", "utilization.gpu [%]", "%"}, {"power.draw", "power.draw [W]", "W"},
    {"persistence_mode", "persistence_mode", NULL}, {"count", "count", NULL},
    /* as driver 580 answers them (the lent H100: `0, N/A, N/A` without NVSwitch); -q's Fabric block, by query */
    {"fabric.state", "fabric.state", NULL}, {"fabric.status", "fabric.status", NULL},
    {"fabric.cliqueId", "fabric.cliqueId", NULL},
    /* the health fields (issue 36), headers and units as driver 580 prints them on the lent H200
     * (tests/data/captured/h200-device/health.txt) */
    {"pcie.link.gen.current", "pcie.link.gen.current", NULL}, {"pcie.link.gen.max", "pcie.link.gen.max", NULL},
    {"pcie.link.width.current", "pcie.link.width.current", NULL}, {"pcie.link.width.max", "pcie.link.width.max", NULL},
    {"ecc.mode.current", "ecc.mode.current", NULL},
    {"ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.volatile.total", NULL},
    {"ecc.errors.uncorrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total", NULL},
    {"ecc.errors.corrected.volatile.total", "ecc.errors.corrected.volatile.total", NULL},
    {"retired_pages.pending", "retired_pages.pending", NULL},
    {"clocks_event_reasons.active", "clocks_event_reasons.active", NULL},
    {"clocks_event_reasons.hw_slowdown", "clocks_event_reasons.hw_slowdown", NULL},
    {"clocks_event_reasons.hw_thermal_slowdown", "clocks_event_reasons.hw_thermal_slowdown", NULL},
    {"clocks_event_reasons.hw_power_brake_slowdown", "clocks_event_reasons.hw_power_brake_slowdown", NULL},
    {"clocks_event_reasons.sw_thermal_slowdown", "clocks_event_reasons.sw_thermal_slowdown", NULL},
    {"clocks_event_reasons.sw_power_cap", "clocks_event_reasons.sw_power_cap", NULL},
    {"enforced.power.limit", "enforced.power.limit [W]", "W"}, {"power.default_limit", "power.default_limit [W]", "W"},
    {"temperature.memory", "temperature.memory", NULL},
    {"clocks.sm", "clocks.current.sm [MHz]", "MHz"}, {"clocks.max.sm", "clocks.max.sm [MHz]", "MHz"},
    /* nvmlDeviceGetGpuRecoveryAction: driver 580 answers it by query ("None", the lent H200); a driver before 550 has
     * no recovery action and refuses the field (recovery_known) */
    {"gpu_recovery_action", "gpu_recovery_action", NULL}};
static const struct { const char *alias, *name; } ALIASES[] = {
    {"gpu_name", "name"}, {"gpu_uuid", "uuid"}, {"gpu_bus_id", "pci.bus_id"}, {"compute_capability", "compute_cap"},
    {"clocks.current.sm", "clocks.sm"}};
/* --query-remapped-rows (nvmlDeviceGetRemappedRows), its header as driver 580 prints it */
static const char *const REMAP_FIELDS[] = {"gpu_bus_id", "gpu_uuid", "remapped_rows.correctable",
    "remapped_rows.uncorrectable", "remapped_rows.pending", "remapped_rows.failure"};
static const struct { const char *name, *header; } APP_FIELDS[] = {
    {"pid", "pid"}, {"process_name", "process_name"}, {"name", "process_name"},
    {"used_memory", "used_gpu_memory [MiB]"}, {"used_gpu_memory", "used_gpu_memory [MiB]"}, {"gpu_uuid", "gpu_uuid"}};

/* ---- small string helpers (Python's str.strip, split(",") and format widths, which count characters) ---- */

static char *strip(char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

static int count_parts(const char *s) {   /* how many parts s.split(",") has */
    int n = 1;
    for (; *s; s++) n += *s == ',';
    return n;
}

/* Split `s` in place at every comma into stripped parts (room for count_parts(s)); returns how many. */
static int split_commas(char *s, char **parts) {
    int n = 0;
    for (char *p = s;; ) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        parts[n++] = strip(p);
        if (!comma) return n;
        p = comma + 1;
    }
}

static int has(char **parts, int n, const char *word) {
    for (int i = 0; i < n; i++)
        if (!strcmp(parts[i], word)) return 1;
    return 0;
}

static size_t chars(const char *s, size_t bytes) {   /* UTF-8 code points in the first `bytes` bytes */
    size_t n = 0;
    for (size_t i = 0; i < bytes && s[i]; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* Python's f"{s[:limit]:<width}" (left) or f"{s:>width}" (right); limit 0 = no slicing. */
static void pad(const char *s, int width, int right, size_t limit) {
    size_t bytes = strlen(s);
    if (limit) {
        size_t seen = 0, i = 0;
        for (; s[i]; i++) {
            if (((unsigned char)s[i] & 0xC0) != 0x80 && seen++ == limit) break;
        }
        bytes = i;
    }
    size_t n = chars(s, bytes);
    size_t fill = (size_t)width > n ? (size_t)width - n : 0;
    if (right) printf("%*s", (int)fill, "");
    fwrite(s, 1, bytes, stdout);
    if (!right) printf("%*s", (int)fill, "");
}

/* Python's int(text.strip() or 0): 1 when `text` is a whole integer. */
static int parse_int(char *text, long long *out) {
    char *s = strip(text), *end;
    if (!*s) { *out = 0; return 1; }
    if (!isdigit((unsigned char)s[*s == '+' || *s == '-'])) return 0;
    *out = strtoll(s, &end, 10);
    return *end == '\0';
}

static char *read_file(const char *path) {   /* the whole file, NUL-terminated, or NULL */
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, mem);
    int failed = ferror(f);   /* a directory opens but does not read (Python: IsADirectoryError) */
    fclose(f);
    fclose(mem);
    if (failed) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- what the host exposes ---- */

/* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...": the second word
 * after "Module for ". */
static char *kernel_driver(void) {
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f) return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, f) >= 0) {
        char *p = strstr(line, "Module for ");
        char *word = p ? strtok(p + 11, " \t\n\r\v\f") : NULL;
        if (word) word = strtok(NULL, " \t\n\r\v\f");
        if (word) found = strdup(word);
    }
    free(line);
    fclose(f);
    return found;
}

/* The version of the driver's own user-space library (never a cuda-compat one: NVML is not in compat). */
static char *user_space_driver(void) {
    char real[PATH_MAX];
    struct stat st;
    for (size_t i = 0; i < N(DRIVER_LIBS); i++) {
        if (!realpath(DRIVER_LIBS[i], real) || stat(real, &st) != 0) continue;
        char *base = strrchr(real, '/') + 1, *so = strstr(base, ".so.");
        if (so) return strdup(so + 4);
    }
    return NULL;
}

struct job { long long pid, mib; char name[64]; };
static struct job *held;
static size_t nheld;
static long long used_mib;

static int by_pid(const void *a, const void *b) {
    long long x = ((const struct job *)a)->pid, y = ((const struct job *)b)->pid;
    return (x > y) - (x < y);
}

/* One process's open files: the last lab GPU handle it holds (in directory order) names its memory. */
static void scan_fds(const char *pid_name) {
    char dir[64], fd[320], target[PATH_MAX], comm[96];
    snprintf(dir, sizeof dir, "/proc/%s/fd", pid_name);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(fd, sizeof fd, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(fd, target, sizeof target - 1);
        if (n < 0) continue;
        target[n] = '\0';
        if (strncmp(target, JOBS, strlen(JOBS)) != 0) continue;
        snprintf(comm, sizeof comm, "/proc/%s/comm", pid_name);
        char *content = read_file(target), *name = content ? read_file(comm) : NULL;
        long long mib;
        if (name && parse_int(content, &mib)) {
            long long pid = strtoll(pid_name, NULL, 10);
            size_t i = 0;
            while (i < nheld && held[i].pid != pid) i++;
            if (i == nheld) held = realloc(held, ++nheld * sizeof *held);
            held[i].pid = pid;
            held[i].mib = mib;
            snprintf(held[i].name, sizeof held[i].name, "%s", strip(name));
        }
        free(content);
        free(name);
    }
    closedir(d);
}

/* No file under JOBS, so no open file can be one: a handle counts only if its path opens here. Then the
 * scan of every process's open files (20,000 readlinks on a machine running 5,000 processes: 200 ms) is
 * skipped, and the answer is the same. A directory this user may not list is scanned all the same. */
static int no_job_files(void) {
    DIR *d = opendir(JOBS);
    if (!d) return errno == ENOENT || errno == ENOTDIR;
    struct dirent *e;
    int empty = 1;
    while (empty && (e = readdir(d))) empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    return empty;
}

/* The processes holding a lab GPU handle open, by pid (every /proc/<pid>/fd entry). */
static void jobs(void) {
    if (no_job_files()) return;
    DIR *proc = opendir("/proc");
    struct dirent *e;
    while (proc && (e = readdir(proc)))
        if (isdigit((unsigned char)e->d_name[0])) scan_fds(e->d_name);
    if (proc) closedir(proc);
    qsort(held, nheld, sizeof *held, by_pid);
    for (size_t i = 0; i < nheld; i++) used_mib += held[i].mib;
}

/* /proc/driver/nvidia/fleet-lab-gpu: key=value lines (the lab's host.py writes it). */
static char **gpu_keys, **gpu_values;
static int ngpu;

static void gpu(void) {
    char *text = read_file(GPU_FILE);
    if (!text) {   /* as the Python stand-in died: a traceback ending in this line, exit 1 */
        fprintf(stderr, "FileNotFoundError: [Errno 2] No such file or directory: '%s'\n", GPU_FILE);
        fflush(stdout);
        exit(1);
    }
    size_t lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    gpu_keys = calloc(lines, sizeof *gpu_keys);
    gpu_values = calloc(lines, sizeof *gpu_values);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (eq) *eq++ = '\0';
        gpu_keys[ngpu] = line;
        gpu_values[ngpu++] = eq ? eq : "";
    }
}

static const char *gpu_get(const char *key) {   /* the last line naming `key` wins; NULL if none */
    for (int i = ngpu - 1; i >= 0; i--)
        if (!strcmp(gpu_keys[i], key)) return gpu_values[i];
    return NULL;
}

static const char *gpu_need(const char *key) {
    const char *value = gpu_get(key);
    if (!value) {
        fflush(stdout);
        fprintf(stderr, "KeyError: '%s'\n", key);
        exit(1);
    }
    return value;
}

/* ---- several GPUs and their NVSwitch fabric (issue 28; fleet_lab/fabric.py writes gpus=, bus_ids=, fabric=,
 * off_fabric= into the GPU file, and the host's stand-in nv-fabricmanager FABRIC_STATE once it set the fabric up) */
#define FABRIC_STATE "/run/fleet-lab/fabric-ready"

static int ngpus(void) {
    const char *n = gpu_get("gpus");
    return n && atoi(n) > 0 ? atoi(n) : 1;
}

static const char *bus_of(int i) {   /* the i-th word of bus_ids=, else bus_id= (one GPU) */
    static char word[64];
    const char *ids = gpu_get("bus_ids");
    if (!ids || !*ids) return gpu_need("bus_id");
    for (int k = 0; *ids; k++) {
        size_t n = strcspn(ids, " ");
        if (k == i) { snprintf(word, sizeof word, "%.*s", (int)n, ids); return word; }
        ids += n;
        while (*ids == ' ') ids++;
    }
    return gpu_need("bus_id");
}

static const char *uuid_of(int i) {   /* GPU 0's uuid; the others differ in their last two hex digits */
    static char uuid[80];
    snprintf(uuid, sizeof uuid, "%s", gpu_need("uuid"));
    size_t n = strlen(uuid);
    if (i && n > 2) snprintf(uuid + n - 2, 3, "%02x", (unsigned)((strtoul(uuid + n - 2, NULL, 16) + (unsigned)i) & 0xff));
    return uuid;
}

static const char *fabric_kind(void) {
    const char *f = gpu_get("fabric");
    return f ? f : "";
}

static int fabric_up(void) {   /* the fabric set up: by the host's own fabric manager, never the provider's here */
    return !strcmp(fabric_kind(), "managed") && access(FABRIC_STATE, F_OK) == 0;
}

static int off_fabric(int i) {
    const char *off = gpu_get("off_fabric");
    char list[256], word[16];
    if (!off) return 0;
    snprintf(list, sizeof list, " %s ", off);
    snprintf(word, sizeof word, " %d ", i);
    return strstr(list, word) != NULL;
}

/* A GPU's Fabric State / Status / CliqueId as nvidia-smi -q prints them (nvmlGpuFabricInfo_t): N/A without
 * NVSwitch; In Progress until a fabric manager set the fabric up; Completed with Success, or with the error of a GPU
 * that failed to register. */
static void fabric_of(int i, const char **state, const char **status, const char **clique) {
    *state = *status = *clique = "N/A";
    if (!*fabric_kind()) return;
    if (!fabric_up()) { *state = "In Progress"; return; }
    *state = "Completed";
    if (off_fabric(i)) *status = "NVML_ERROR_NOT_READY";
    else { *status = "Success"; *clique = "32766"; }
}

/* `nvidia-smi topo -m` cell of GPUs i and j: NV18 (H100 SXM: 18 NVLinks through the NVSwitches) unless either
 * left the fabric, then the PCIe path: NODE within a NUMA node (GPUs 0-3, 4-7), SYS across. */
static const char *link_of(int i, int j, int n) {
    if (i == j) return " X ";
    if (*fabric_kind() && !off_fabric(i) && !off_fabric(j)) return "NV18";
    return (i < n / 2) == (j < n / 2) ? "NODE" : "SYS";
}

static void topo(void) {
    int n = ngpus();
    printf("\t\x1b[4m");   /* the real one underlines its header with ANSI escapes, even into a pipe */
    for (int j = 0; j < n; j++) printf("GPU%d\t", j);
    printf("CPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n");
    for (int i = 0; i < n; i++) {
        printf("GPU%d", i);
        for (int j = 0; j < n; j++) printf("\t%s", link_of(i, j, n));
        if (n > 1) printf("\t%s\t%d\t\tN/A\n", i < n / 2 ? "0-55,112-167" : "56-111,168-223", i >= n / 2 && n > 1);
        else printf("\t0-1\t0\t\tN/A\n");
    }
    printf("\nLegend:\n\n"
           "  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
           "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node\n"
           "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
           "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)\n"
           "  PIX  = Connection traversing at most a single PCIe bridge\n"
           "  NV#  = Connection traversing a bonded set of # NVLinks\n");
}

static const char *cuda_version(void);
static const char *hv(int i, const char *key, const char *healthy);
static int lost(int i);
static int recovery_known(const char *driver);
static int print_lost(int i);

/* One `-q` line: the key padded so that " : " falls where the real 580 driver's does (column 55). */
static void field(int indent, const char *key, const char *value) {
    printf("%*s%-*s: %s\n", indent, "", 55 - indent, key, value);
}

/* The XML's <cuda_version> (the table header's "CUDA Version", as the real 580 prints both): N/A where no libcuda
 * answers; the XML never stops on it (the table's header does, below). */
static const char *xml_cuda_version(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib || !dlsym(lib, "cuDriverGetVersion")) return "N/A";
    return cuda_version();
}

/* -q -x's <ecc_errors> as driver 580 prints it (the lent H200's capture): SRAM and DRAM, volatile and aggregate, the
 * aggregate's SRAM RMA gate. Staged per GPU as health.<g>.<volatile|aggregate>.<element>=N (issue 48). */
static void ecc_errors(int i) {
    static const char *const KINDS[] = {"sram_correctable", "sram_uncorrectable_parity", "sram_uncorrectable_secded",
                                        "dram_correctable", "dram_uncorrectable"};
    static const char *const SCOPES[] = {"volatile", "aggregate"};
    char key[96];
    printf("\t\t<ecc_mode>\n\t\t\t<current_ecc>%s</current_ecc>\n\t\t</ecc_mode>\n\t\t<ecc_errors>\n",
           hv(i, "ecc_mode", "Enabled"));
    for (size_t s = 0; s < N(SCOPES); s++) {
        printf("\t\t\t<%s>\n", SCOPES[s]);
        for (size_t k = 0; k < N(KINDS); k++) {
            snprintf(key, sizeof key, "%s.%s", SCOPES[s], KINDS[k]);
            printf("\t\t\t\t<%s>%s</%s>\n", KINDS[k], hv(i, key, "0"), KINDS[k]);
        }
        if (s == 1)
            printf("\t\t\t\t<sram_threshold_exceeded>%s</sram_threshold_exceeded>\n",
                   hv(i, "aggregate.sram_threshold_exceeded", "No"));
        printf("\t\t\t</%s>\n", SCOPES[s]);
    }
    printf("\t\t</ecc_errors>\n");
}

static void query_all(const char *driver, int xml) {   /* the parts of -q / -q -x fleet reads, per GPU */
    int n = ngpus();
    const char *state, *status, *clique;
    if (xml) {
        printf("<?xml version=\"1.0\" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM \"nvsmi_device_v12.dtd\">\n<nvidia_smi_log>\n"
               "\t<driver_version>%s</driver_version>\n\t<cuda_version>%s</cuda_version>\n"
               "\t<attached_gpus>%d</attached_gpus>\n", driver, xml_cuda_version(), n);
        for (int i = 0; i < n; i++) {
            if (lost(i)) continue;   /* NVML cannot reach it: no block */
            fabric_of(i, &state, &status, &clique);
            printf("\t<gpu id=\"%s\">\n\t\t<product_name>%s</product_name>\n\t\t<uuid>%s</uuid>\n",
                   bus_of(i), gpu_need("name"), uuid_of(i));
            if (recovery_known(driver))
                printf("\t\t<gpu_recovery_action>%s</gpu_recovery_action>\n", hv(i, "recovery", "None"));
            ecc_errors(i);
            printf("\t\t<pci>\n\t\t\t<pci_bus_id>%s</pci_bus_id>\n"
                   "\t\t\t<replay_counter>%s</replay_counter>\n\t\t\t<replay_rollover_counter>0</replay_rollover_counter>\n"
                   "\t\t</pci>\n", bus_of(i), hv(i, "replay", "0"));
            printf(
                   "\t\t<fabric>\n\t\t\t<state>%s</state>\n\t\t\t<status>%s</status>\n\t\t\t<cliqueId>%s</cliqueId>\n"
                   "\t\t\t<clusterUuid>%s</clusterUuid>\n\t\t</fabric>\n\t</gpu>\n", state, status, clique,
                   *fabric_kind() ? "00000000-0000-0000-0000-000000000000" : "N/A");
        }
        printf("</nvidia_smi_log>\n");
        return;
    }
    char now[64];
    time_t t = time(NULL);
    strftime(now, sizeof now, "%a %b %d %H:%M:%S %Y", localtime(&t));
    printf("\n==============NVSMI LOG==============\n\n");
    field(0, "Timestamp", now);
    field(0, "Driver Version", driver);
    field(0, "CUDA Version", cuda_version());
    printf("\n");
    char count[16];
    snprintf(count, sizeof count, "%d", n);
    field(0, "Attached GPUs", count);
    for (int i = 0; i < n; i++) {
        fabric_of(i, &state, &status, &clique);
        printf("GPU %s\n", bus_of(i));
        field(4, "Product Name", gpu_need("name"));
        field(4, "GPU UUID", uuid_of(i));
        printf("    Fabric\n");
        field(8, "State", state);
        field(8, "Status", status);
        field(8, "CliqueId", clique);
        field(8, "ClusterUUID", *fabric_kind() ? "00000000-0000-0000-0000-000000000000" : "N/A");
        if (!*fabric_kind()) {   /* as the real one on a GPU without NVSwitch (the lent H100's capture) */
            printf("        Health\n");
            const char *health[] = {"Summary", "Bandwidth", "Route Recovery in progress", "Route Unhealthy",
                                    "Access Timeout Recovery", "Incorrect Configuration", "Partition Assigned"};
            for (size_t h = 0; h < N(health); h++) field(12, health[h], "N/A");
        }
    }
}

/* `nvidia-smi nvlink -s`: each GPU's 18 links at NVLink4's 26.562 GB/s, <inactive> where the GPU left the fabric;
 * nothing at all on a GPU without NVLink (the real one prints nothing on a PCIe H100). */
static void nvlink_status(void) {
    int n = ngpus();
    if (!*fabric_kind()) return;
    for (int i = 0; i < n; i++) {
        printf("GPU %d: %s (UUID: %s)\n", i, gpu_need("name"), uuid_of(i));
        for (int l = 0; l < 18; l++)
            printf(off_fabric(i) ? "\t Link %d: <inactive>\n" : "\t Link %d: 26.562 GB/s\n", l);
    }
}

/* "CUDA Version" from cuDriverGetVersion of whichever libcuda.so.1 the loader finds (dlopen, as ctypes does). */
static const char *cuda_version(void) {
    static char text[32];
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return "N/A";
    int (*get)(int *) = (int (*)(int *))dlsym(lib, "cuDriverGetVersion");
    if (!get) {
        fflush(stdout);
        fprintf(stderr, "AttributeError: libcuda.so.1: undefined symbol: cuDriverGetVersion\n");
        exit(1);
    }
    int version = 0;
    get(&version);
    snprintf(text, sizeof text, "%d.%d", version / 1000, version % 1000 / 10);
    return text;
}

/* ---- the answers ---- */

static const char *canonical(const char *field) {
    for (size_t i = 0; i < N(ALIASES); i++)
        if (!strcmp(field, ALIASES[i].alias)) return ALIASES[i].name;
    /* the pre-530 spelling, still answered (under the new header) by driver 580: the H200 capture */
    if (!strncmp(field, "clocks_throttle_reasons.", 24)) {
        char *event = malloc(strlen(field) + 1);
        sprintf(event, "clocks_event_reasons.%s", field + 24);
        return event;
    }
    return field;
}

/* ---- GPU health (issue 36): what fleet_lab/health.py staged for GPU i (health.<i>.<key>=, else health.<key>=),
 * else a healthy H100/H200 SXM at rest as the lent H200 answered (Gen5 x16, ECC on and clean, 700 W of 700 W) ---- */
static const char *hv(int i, const char *key, const char *healthy) {
    char name[96];
    snprintf(name, sizeof name, "health.%d.%s", i, key);
    const char *v = gpu_get(name);
    if (v) return v;
    snprintf(name, sizeof name, "health.%s", key);
    v = gpu_get(name);
    return v ? v : healthy;
}

/* The recovery action (query field and -q -x element) from driver 550 on: an older one knows neither. */
static int recovery_known(const char *driver) { return driver && atoi(driver) >= 550; }

static int lost(int i) { return !strcmp(hv(i, "lost", "0"), "1"); }

static int remapper(int i) { return strcmp(hv(i, "remapper", "yes"), "no") != 0; }   /* A100 and later remap rows */

/* nvmlClocksEventReasons: the staged bits, plus GpuIdle (0x1) while no job holds the GPU */
static unsigned long long event_mask(int i) {
    unsigned long long staged = strtoull(hv(i, "events", "0"), NULL, 16);
    return staged | (nheld && i == 0 ? 0 : 0x1ULL);
}

/* "Unable to determine the device handle for GPU0000:2A:00.0: Unknown Error": what nvidia-smi prints for a GPU
 * NVML lost (fallen off the bus), in place of its line; the run then exits 15 (nvidia-smi(1) RETURN VALUE: "GPU has
 * fallen off the bus or has otherwise become inaccessible"). */
static int print_lost(int i) {
    if (!lost(i)) return 0;
    printf("Unable to determine the device handle for GPU%s: Unknown Error\n", bus_of(i) + 4);
    return 1;
}

static int field_index(const char *field) {
    for (size_t i = 0; i < N(FIELDS); i++)
        if (!strcmp(field, FIELDS[i].name)) return (int)i;
    return -1;
}

static void print_value(int f, const char *driver, int nounits, int gpu_index) {
    const char *name = FIELDS[f].name, *mem = gpu_get("memory_mb");
    char number[32];
    const char *known = number;
    long long total = mem && *mem ? strtoll(mem, NULL, 10) : 0;
    if (!mem) mem = "";
    if (!strcmp(name, "index")) snprintf(number, sizeof number, "%d", gpu_index);
    else if (!strcmp(name, "name")) known = gpu_need("name");
    else if (!strcmp(name, "driver_version")) known = driver;
    else if (!strcmp(name, "compute_cap")) known = gpu_need("compute_cap");
    else if (!strcmp(name, "memory.total")) known = *mem ? mem : "[N/A]";
    else if (!strcmp(name, "memory.used")) {
        if (*mem) snprintf(number, sizeof number, "%lld", used_mib); else known = "[N/A]";
    } else if (!strcmp(name, "memory.free")) {
        if (*mem) snprintf(number, sizeof number, "%lld", total > used_mib ? total - used_mib : 0);
        else known = "[N/A]";
    } else if (!strcmp(name, "uuid")) known = uuid_of(gpu_index);
    else if (!strcmp(name, "pci.bus_id")) known = bus_of(gpu_index);
    else if (!strcmp(name, "temperature.gpu")) known = hv(gpu_index, "temp", "31");
    else if (!strcmp(name, "utilization.gpu")) known = nheld ? "100" : "0";
    else if (!strcmp(name, "power.draw")) known = "69.42";
    else if (!strcmp(name, "persistence_mode")) known = hv(gpu_index, "persistence", "Enabled");
    else if (!strcmp(name, "gpu_recovery_action")) known = hv(gpu_index, "recovery", "None");
    else if (!strcmp(name, "pcie.link.gen.current")) known = hv(gpu_index, "pcie_gen", "5");
    else if (!strcmp(name, "pcie.link.gen.max")) known = hv(gpu_index, "pcie_gen_max", "5");
    else if (!strcmp(name, "pcie.link.width.current")) known = hv(gpu_index, "pcie_width", "16");
    else if (!strcmp(name, "pcie.link.width.max")) known = hv(gpu_index, "pcie_width_max", "16");
    else if (!strcmp(name, "ecc.mode.current")) known = hv(gpu_index, "ecc_mode", "Enabled");
    else if (!strcmp(name, "ecc.errors.uncorrected.volatile.total")) known = hv(gpu_index, "ecc_unc_vol", "0");
    else if (!strcmp(name, "ecc.errors.uncorrected.aggregate.total")) known = hv(gpu_index, "ecc_unc_agg", "0");
    else if (!strcmp(name, "ecc.errors.corrected.volatile.total")) known = hv(gpu_index, "ecc_cor_vol", "0");
    else if (!strcmp(name, "retired_pages.pending"))   /* [N/A] where rows are remapped instead (the H200) */
        known = remapper(gpu_index) ? "[N/A]" : hv(gpu_index, "retired_pending", "No");
    else if (!strcmp(name, "clocks_event_reasons.active"))
        snprintf(number, sizeof number, "0x%016llx", event_mask(gpu_index));
    else if (!strncmp(name, "clocks_event_reasons.", 21)) {
        static const struct { const char *reason; unsigned long long bit; } BITS[] = {
            {"sw_power_cap", 0x4}, {"hw_slowdown", 0x8}, {"sw_thermal_slowdown", 0x20},
            {"hw_thermal_slowdown", 0x40}, {"hw_power_brake_slowdown", 0x80}};
        known = "Not Active";
        for (size_t b = 0; b < N(BITS); b++)
            if (!strcmp(name + 21, BITS[b].reason) && (event_mask(gpu_index) & BITS[b].bit)) known = "Active";
    }
    else if (!strcmp(name, "enforced.power.limit")) known = hv(gpu_index, "power_limit", "700.00");
    else if (!strcmp(name, "power.default_limit")) known = hv(gpu_index, "power_default", "700.00");
    else if (!strcmp(name, "temperature.memory")) known = hv(gpu_index, "temp_memory", "30");
    else if (!strcmp(name, "clocks.sm")) known = nheld ? "1980" : "345";
    else if (!strcmp(name, "clocks.max.sm")) known = "1980";
    else if (!strncmp(name, "fabric.", 7)) {
        const char *state, *status, *clique;
        fabric_of(gpu_index, &state, &status, &clique);
        known = !strcmp(name, "fabric.state") ? state : !strcmp(name, "fabric.status") ? status : clique;
    }
    else snprintf(number, sizeof number, "%d", ngpus());   /* count */
    fputs(known, stdout);
    if (FIELDS[f].unit && !nounits && known[0] != '[') printf(" %s", FIELDS[f].unit);
}

static int query(char *spec, char *fmt, const char *driver) {
    char *fields[count_parts(spec)], *options[count_parts(fmt)], fmt_copy[strlen(fmt) + 1];
    int nf = split_commas(spec, fields);
    for (int i = 0; i < nf; i++) {
        fields[i] = (char *)canonical(fields[i]);
        if (field_index(fields[i]) < 0 || (!strcmp(fields[i], "gpu_recovery_action") && !recovery_known(driver))) {
            printf("Field \"%s\" is not a valid field to query.\n\n", fields[i]);
            return 2;
        }
    }
    int no = split_commas(strcpy(fmt_copy, fmt), options);
    if (!has(options, no, "csv")) {
        printf("\"%s\" is not a valid format. Only \"csv\" is supported (fleet lab stand-in).\n", fmt);
        return 2;
    }
    if (!has(options, no, "noheader")) {
        for (int i = 0; i < nf; i++) printf("%s%s", i ? ", " : "", FIELDS[field_index(fields[i])].header);
        putchar('\n');
    }
    for (int i = 0; i < nf; i++)   /* only these answers depend on the jobs: skip the scan otherwise */
        if (!strcmp(fields[i], "memory.used") || !strcmp(fields[i], "memory.free") ||
            !strcmp(fields[i], "utilization.gpu")) {
            jobs();
            break;
        }
    const char *needed[] = {"name", "compute_cap", "uuid", "bus_id"};   /* the Python looked all of them up */
    for (size_t i = 0; i < N(needed); i++) gpu_need(needed[i]);
    int gone = 0;
    for (int g = 0; g < ngpus(); g++) {   /* one row per GPU; the jobs' memory is GPU 0's */
        if (print_lost(g)) { gone = 1; continue; }
        long long used = used_mib;
        size_t held_jobs = nheld;
        if (g) used_mib = 0, nheld = 0;
        for (int i = 0; i < nf; i++) {
            if (i) fputs(", ", stdout);
            print_value(field_index(fields[i]), driver, has(options, no, "nounits"), g);
        }
        used_mib = used, nheld = held_jobs;
        putchar('\n');
    }
    return gone ? 15 : 0;
}

static int remap_index(const char *field) {
    for (size_t i = 0; i < N(REMAP_FIELDS); i++)
        if (!strcmp(field, REMAP_FIELDS[i])) return (int)i;
    return -1;
}

/* --query-remapped-rows: one line per GPU; a GPU without a row remapper answers [N/A] (NVML_ERROR_NOT_SUPPORTED,
 * as the H200 answers retired_pages.pending) */
static int query_remapped(char *spec, char *fmt) {
    char *fields[count_parts(spec)], *options[count_parts(fmt)];
    int nf = split_commas(spec, fields), no = split_commas(fmt, options), gone = 0;
    for (int i = 0; i < nf; i++)
        if (remap_index(fields[i]) < 0) {
            printf("Field \"%s\" is not a valid field to query.\n\n", fields[i]);
            return 2;
        }
    if (!has(options, no, "noheader")) {
        for (int i = 0; i < nf; i++) printf("%s%s", i ? ", " : "", fields[i]);
        putchar('\n');
    }
    for (int g = 0; g < ngpus(); g++) {
        if (print_lost(g)) { gone = 1; continue; }
        for (int i = 0; i < nf; i++) {
            int k = remap_index(fields[i]);
            const char *v = k == 0 ? bus_of(g) : k == 1 ? uuid_of(g) : !remapper(g) ? "[N/A]"
                : k == 2 ? hv(g, "remap_corr", "0") : k == 3 ? hv(g, "remap_unc", "0")
                : k == 4 ? hv(g, "remap_pending", "No") : hv(g, "remap_failure", "No");
            printf("%s%s", i ? ", " : "", v);
        }
        putchar('\n');
    }
    return gone ? 15 : 0;
}

static int app_index(const char *field) {
    for (size_t i = 0; i < N(APP_FIELDS); i++)
        if (!strcmp(field, APP_FIELDS[i].name)) return (int)i;
    return -1;
}

static int query_apps(char *spec, char *fmt) {
    char *fields[count_parts(spec)], *options[count_parts(fmt)];
    int nf = split_commas(spec, fields);
    for (int i = 0; i < nf; i++)
        if (app_index(fields[i]) < 0) {
            printf("Field \"%s\" is not a valid field to query.\n\n", fields[i]);
            return 2;
        }
    int no = split_commas(fmt, options), nounits = has(options, no, "nounits");
    if (!has(options, no, "noheader")) {
        for (int i = 0; i < nf; i++) printf("%s%s", i ? ", " : "", APP_FIELDS[app_index(fields[i])].header);
        putchar('\n');
    }
    jobs();
    const char *uuid = nheld ? gpu_need("uuid") : "";
    for (size_t j = 0; j < nheld; j++) {
        for (int i = 0; i < nf; i++) {
            const char *f = fields[i];
            if (i) fputs(", ", stdout);
            if (!strcmp(f, "pid")) printf("%lld", held[j].pid);
            else if (!strcmp(f, "process_name") || !strcmp(f, "name")) fputs(held[j].name, stdout);
            else if (!strcmp(f, "gpu_uuid")) fputs(uuid, stdout);
            else printf(nounits ? "%lld" : "%lld MiB", held[j].mib);   /* used_memory, used_gpu_memory */
        }
        putchar('\n');
    }
    return 0;
}

#define BAR "+-----------------------------------------+------------------------+----------------------+\n"

static void table(const char *driver) {
    const char *mem = gpu_get("memory_mb"), *name = gpu_need("name"), *bus = bus_of(0);
    char usage[96], now[64];
    time_t t = time(NULL);
    const char *cuda = cuda_version();   /* all looked up before the first line, as the Python built its list */
    if (mem && *mem) jobs();   /* the memory in use is shown only where the GPU has its own memory */
    if (mem && *mem) snprintf(usage, sizeof usage, "%lldMiB / %6lldMiB", used_mib, strtoll(mem, NULL, 10));
    else snprintf(usage, sizeof usage, "Not Supported");
    strftime(now, sizeof now, "%a %b %d %H:%M:%S %Y", localtime(&t));
    printf("%s       \n", now);
    printf("+-----------------------------------------------------------------------------------------+\n");
    printf("| NVIDIA-SMI ");
    pad(driver, 22, 0, 0);
    printf(" Driver Version: ");
    pad(driver, 14, 0, 0);
    printf(" CUDA Version: ");
    pad(cuda, 9, 0, 0);
    printf("|\n| fleet lab stand-in: no GPU here, these figures describe the simulated host              |\n");
    printf(BAR);
    printf("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
           "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
           "|                                         |                        |               MIG M. |\n"
           "|=========================================+========================+======================|\n");
    for (int g = 0; g < ngpus(); g++) {
        if (g) {   /* the jobs hold GPU 0 */
            if (mem && *mem) snprintf(usage, sizeof usage, "%lldMiB / %6lldMiB", 0LL, strtoll(mem, NULL, 10));
            bus = bus_of(g);
        }
        printf("|   %d  ", g);
        pad(name, 28, 0, 28);
        printf("        On  |   ");
        pad(bus, 16, 0, 0);
        printf(" Off |                    0 |\n| N/A   31C    P0             69W /  700W | ");
        pad(usage, 22, 1, 0);
        printf(" |      0%%      Default |\n");
        printf("|                                         |                        |             Disabled |\n");
        printf(BAR);
    }
}

/* The NVML version of a library version: 580.159.04 -> 580.159 (as NVML reports it), else unchanged. */
static void print_nvml_version(const char *label, const char *version) {
    const char *last = strrchr(version, '.');
    int dots = 0;
    for (const char *p = version; *p; p++) dots += *p == '.';
    if (dots == 2) printf("%s%.*s\n", label, (int)(last - version), version);
    else printf("%s%s\n", label, version);
}

static char **keys, **values;   /* the command line as key -> value; the last of a key wins */
static int nopts;

static char *opt(const char *key) {
    char *found = NULL;
    for (int i = 0; i < nopts; i++)
        if (!strcmp(keys[i], key)) found = values[i];
    return found;
}

/* Exit codes and messages as NVIDIA's: nvidia-smi(1) RETURN VALUE "2 - A supplied argument or flag is invalid",
 * "9 - NVIDIA driver is not loaded" (its message as on a real host, cpnr/computing#73); 18 is nvml.h's
 * NVML_ERROR_LIB_RM_VERSION_MISMATCH, printed with the NVML library version "580.159" for a 580.159.04 library
 * (a real host: cpnr/computing#109; EESSI/software-layer-scripts#105 "NVML library version: 580.95"). */
int main(int argc, char **argv) {
    char *driver = kernel_driver();
    if (!driver) {
        printf("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
               "Make sure that the latest NVIDIA driver is installed and running.\n");
        return 9;
    }
    char *library = user_space_driver();
    if (library && *library && strcmp(library, driver) != 0) {
        printf("Failed to initialize NVML: Driver/library version mismatch\n");
        print_nvml_version("NVML library version: ", library);
        return 18;
    }
    /* --query-gpu=a,b and --query-gpu a,b both work, as with the real one */
    keys = calloc((size_t)argc, sizeof *keys);
    values = calloc((size_t)argc, sizeof *values);
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i], *eq = strchr(arg, '=');
        if (eq) { *eq = '\0'; keys[nopts] = arg; values[nopts] = eq + 1; }
        else if ((!strcmp(arg, "--query-gpu") || !strcmp(arg, "--format") || !strcmp(arg, "--query-compute-apps")
                  || !strcmp(arg, "--query-remapped-rows"))
                 && i + 1 < argc) { keys[nopts] = arg; values[nopts] = argv[++i]; }
        else { keys[nopts] = arg; values[nopts] = ""; }
        nopts++;
    }
    if (opt("--version")) {
        printf("NVIDIA-SMI version  : %s\n", driver);
        if (strrchr(driver, '.')) printf("NVML version        : %.*s\n", (int)(strrchr(driver, '.') - driver), driver);
        else printf("NVML version        : %s\n", driver);
        printf("DRIVER version      : %s\nCUDA Version        : %s\n", driver, cuda_version());
        printf("fleet lab stand-in  : not NVIDIA's nvidia-smi\n");
        return 0;
    }
    gpu();
    if (opt("-L") || opt("--list-gpus")) {
        int gone = 0;
        for (int i = 0; i < ngpus(); i++) {
            if (print_lost(i)) gone = 1;
            else printf("GPU %d: %s (UUID: %s)\n", i, gpu_need("name"), uuid_of(i));
        }
        return gone ? 15 : 0;
    }
    if (opt("topo") && opt("-m")) {   /* the real layout: tab-separated, the header underlined, Legend after */
        topo();
        return 0;
    }
    if (opt("nvlink") && (opt("-s") || opt("--status"))) {
        nvlink_status();
        return 0;
    }
    if (opt("-q") && (nopts == 1 || (nopts == 2 && opt("-x")))) {   /* the parts of `nvidia-smi -q` fleet reads */
        query_all(driver, opt("-x") != NULL);
        return 0;
    }
    char *fmt = opt("--format");
    if (opt("--query-gpu")) return query(opt("--query-gpu"), fmt ? fmt : "csv", driver);
    if (opt("--query-compute-apps")) return query_apps(opt("--query-compute-apps"), fmt ? fmt : "csv");
    if (opt("--query-remapped-rows")) return query_remapped(opt("--query-remapped-rows"), fmt ? fmt : "csv");
    table(driver);
    return 0;
}
