/*
 * libnvidia-ml.so.1 for the tritonops lab: simulated GPUs read from a profile file.
 *
 * The real nvidia-ml-py (pynvml) loads this library unchanged; the symbol names, argument
 * order and struct layouts follow pynvml's ctypes declarations. Anything not implemented
 * here is absent, so pynvml raises NVMLError_FunctionNotFound for it, like an old driver.
 *
 * Profile: key=value lines, from $TRITONOPS_LAB_GPU_PROFILE or /etc/tritonops-lab/gpu-profile
 * (the default is what a non-interactive SSH session sees). Keys: see profile_file.py.
 *
 * Build: gcc -shared -fPIC -O2 -Wall -o libnvidia-ml.so.1 -Wl,-soname,libnvidia-ml.so.1 fake_nvml.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN 999

#define NVML_MEMORY_V2_VERSION 0x02000028u
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_TOPOLOGY_INTERNAL 0
#define MAX_GPUS 64
#define MAX_PROCS 32
#define MAX_FAULTS 16
#define TEXT 128

typedef struct { char call[64]; int code; } fault_t;
typedef struct { unsigned int pid; unsigned long long used; } proc_t;

typedef struct nvmlDevice_st {
    int index;
    char name[TEXT], uuid[TEXT], pci_bus_id[TEXT];
    unsigned int pci_device_id, pci_subsystem_id;
    unsigned long long memory_total, memory_reserved, bar1_total;
    int cc_major, cc_minor, nvlinks, persistence, mig;
    unsigned int power_limit_mw, temperature_c;
    unsigned long long nvlink_down_mask;
    proc_t compute[MAX_PROCS]; int n_compute;
    proc_t graphics[MAX_PROCS]; int n_graphics;
    fault_t faults[MAX_FAULTS]; int n_faults;
} device_t;

typedef device_t *nvmlDevice_t;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned long long bar1Total, bar1Free, bar1Used; } nvmlBAR1Memory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

static struct {
    int initialized;
    char driver[TEXT], nvml[TEXT];
    int cuda_driver, init_fail, gpu_count, topology, p2p;
    int topo[MAX_GPUS][MAX_GPUS];
    fault_t faults[MAX_FAULTS]; int n_faults;
    device_t gpus[MAX_GPUS];
} lab;

static void parse_faults(const char *value, fault_t *faults, int *n) {
    /* "nvmlDeviceGetMemoryInfo:15,nvmlDeviceGetName:3" */
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", value);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item && *n < MAX_FAULTS;
         item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        if (!colon) continue;
        *colon = '\0';
        snprintf(faults[*n].call, sizeof faults[*n].call, "%s", item);
        faults[*n].code = atoi(colon + 1);
        (*n)++;
    }
}

static void parse_procs(const char *value, proc_t *procs, int *n) {
    /* "1234:1073741824,5678:2048" (pid:used bytes) */
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", value);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item && *n < MAX_PROCS;
         item = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(item, ':');
        if (!colon) continue;
        procs[*n].pid = (unsigned int)strtoul(item, NULL, 10);
        procs[*n].used = strtoull(colon + 1, NULL, 10);
        (*n)++;
    }
}

static unsigned long long parse_mask(const char *value) {
    unsigned long long mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", value);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        int link = atoi(item);
        if (link >= 0 && link < 64) mask |= 1ull << link;
    }
    return mask;
}

static void set_gpu_key(device_t *d, const char *key, const char *v) {
    if (!strcmp(key, "name")) snprintf(d->name, TEXT, "%s", v);
    else if (!strcmp(key, "uuid")) snprintf(d->uuid, TEXT, "%s", v);
    else if (!strcmp(key, "pci_bus_id")) snprintf(d->pci_bus_id, TEXT, "%s", v);
    else if (!strcmp(key, "pci_device_id")) d->pci_device_id = (unsigned int)strtoul(v, NULL, 0);
    else if (!strcmp(key, "pci_subsystem_id")) d->pci_subsystem_id = (unsigned int)strtoul(v, NULL, 0);
    else if (!strcmp(key, "memory_total")) d->memory_total = strtoull(v, NULL, 10);
    else if (!strcmp(key, "memory_reserved")) d->memory_reserved = strtoull(v, NULL, 10);
    else if (!strcmp(key, "bar1_total")) d->bar1_total = strtoull(v, NULL, 10);
    else if (!strcmp(key, "cc")) sscanf(v, "%d.%d", &d->cc_major, &d->cc_minor);
    else if (!strcmp(key, "nvlinks")) d->nvlinks = atoi(v);
    else if (!strcmp(key, "nvlink_down")) d->nvlink_down_mask = parse_mask(v);
    else if (!strcmp(key, "persistence")) d->persistence = atoi(v);
    else if (!strcmp(key, "mig")) d->mig = atoi(v);
    else if (!strcmp(key, "power_limit_mw")) d->power_limit_mw = (unsigned int)strtoul(v, NULL, 10);
    else if (!strcmp(key, "temperature_c")) d->temperature_c = (unsigned int)strtoul(v, NULL, 10);
    else if (!strcmp(key, "processes")) parse_procs(v, d->compute, &d->n_compute);
    else if (!strcmp(key, "graphics_processes")) parse_procs(v, d->graphics, &d->n_graphics);
    else if (!strcmp(key, "fail")) parse_faults(v, d->faults, &d->n_faults);
}

static nvmlReturn_t load_profile(void) {
    const char *path = getenv("TRITONOPS_LAB_GPU_PROFILE");
    if (!path || !*path) path = "/etc/tritonops-lab/gpu-profile";
    FILE *f = fopen(path, "r");
    if (!f) return NVML_ERROR_DRIVER_NOT_LOADED;
    memset(&lab, 0, sizeof lab);
    lab.topology = 50; /* NVML_TOPOLOGY_SYSTEM unless the profile says otherwise */
    for (int i = 0; i < MAX_GPUS; i++) {
        for (int j = 0; j < MAX_GPUS; j++) lab.topo[i][j] = -1;
        lab.gpus[i].index = i;
        lab.gpus[i].persistence = 1;
    }
    char line[2048];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || !strchr(line, '=')) continue;
        char *eq = strchr(line, '=');
        *eq = '\0';
        const char *key = line, *v = eq + 1;
        int i, j, used = 0;
        if (!strcmp(key, "driver")) snprintf(lab.driver, TEXT, "%s", v);
        else if (!strcmp(key, "nvml")) snprintf(lab.nvml, TEXT, "%s", v);
        else if (!strcmp(key, "cuda_driver")) lab.cuda_driver = atoi(v);
        else if (!strcmp(key, "init_fail")) lab.init_fail = atoi(v);
        else if (!strcmp(key, "gpu_count")) lab.gpu_count = atoi(v) > MAX_GPUS ? MAX_GPUS : atoi(v);
        else if (!strcmp(key, "topology")) lab.topology = atoi(v);
        else if (!strcmp(key, "p2p")) lab.p2p = atoi(v);
        else if (!strcmp(key, "fail")) parse_faults(v, lab.faults, &lab.n_faults);
        else if (sscanf(key, "topo.%d.%d%n", &i, &j, &used) == 2 && key[used] == '\0') {
            if (i >= 0 && i < MAX_GPUS && j >= 0 && j < MAX_GPUS) lab.topo[i][j] = lab.topo[j][i] = atoi(v);
        } else if (sscanf(key, "gpu.%d.%n", &i, &used) == 1 && used > 0 && i >= 0 && i < MAX_GPUS) {
            set_gpu_key(&lab.gpus[i], key + used, v);
        }
    }
    fclose(f);
    return NVML_SUCCESS;
}

static int injected(const fault_t *faults, int n, const char *call) {
    for (int i = 0; i < n; i++)
        if (!strcmp(faults[i].call, call)) return faults[i].code;
    return 0;
}

/* Every call starts here: initialized? a system-wide fault for this call? */
#define SYSTEM_CALL(call)                                                   \
    do {                                                                    \
        if (!lab.initialized) return NVML_ERROR_UNINITIALIZED;              \
        int _f = injected(lab.faults, lab.n_faults, call);                  \
        if (_f) return _f;                                                  \
    } while (0)

/* ... and for device calls: a valid handle? a fault on this GPU? */
#define DEVICE_CALL(call, dev)                                              \
    do {                                                                    \
        SYSTEM_CALL(call);                                                  \
        if (!valid(dev)) return NVML_ERROR_INVALID_ARGUMENT;                \
        int _g = injected((dev)->faults, (dev)->n_faults, call);            \
        if (_g) return _g;                                                  \
    } while (0)

static int valid(nvmlDevice_t dev) {
    return dev >= &lab.gpus[0] && dev < &lab.gpus[lab.gpu_count];
}

static nvmlReturn_t copy_text(char *dst, unsigned int length, const char *src) {
    if (!dst) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

static unsigned long long procs_used(const device_t *d) {
    unsigned long long used = 0;
    for (int i = 0; i < d->n_compute; i++) used += d->compute[i].used;
    for (int i = 0; i < d->n_graphics; i++) used += d->graphics[i].used;
    return used;
}

/* ---- init / shutdown / errors ---- */

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    nvmlReturn_t ret = load_profile();
    if (ret != NVML_SUCCESS) return ret;
    if (lab.init_fail) return lab.init_fail;
    lab.initialized++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    if (!lab.initialized) return NVML_ERROR_UNINITIALIZED;
    lab.initialized--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 5: return "Already Initialized";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 8: return "Insufficient External Power";
    case 9: return "Driver Not Loaded";
    case 10: return "Timeout";
    case 11: return "Interrupt Request Issue";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 14: return "Corrupted infoROM";
    case 15: return "GPU is lost";
    case 16: return "GPU requires restart";
    case 17: return "The operating system has blocked the request.";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    case 19: return "In use by another client";
    case 20: return "Insufficient Memory";
    case 21: return "No data";
    case 25: return "Argument version mismatch";
    case 28: return "GPU not found";
    default: return "Unknown Error";
    }
}

/* ---- system ---- */

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    SYSTEM_CALL("nvmlSystemGetDriverVersion");
    return copy_text(version, length, lab.driver);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    SYSTEM_CALL("nvmlSystemGetNVMLVersion");
    return copy_text(version, length, lab.nvml);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    SYSTEM_CALL("nvmlSystemGetCudaDriverVersion");
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    *version = lab.cuda_driver;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) {
    SYSTEM_CALL("nvmlSystemGetCudaDriverVersion_v2");
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    *version = lab.cuda_driver;
    return NVML_SUCCESS;
}

/* ---- device enumeration ---- */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    SYSTEM_CALL("nvmlDeviceGetCount_v2");
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)lab.gpu_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    SYSTEM_CALL("nvmlDeviceGetHandleByIndex_v2");
    if (!device || index >= (unsigned int)lab.gpu_count) return NVML_ERROR_INVALID_ARGUMENT;
    int f = injected(lab.gpus[index].faults, lab.gpus[index].n_faults, "nvmlDeviceGetHandleByIndex_v2");
    if (f) return f;
    *device = &lab.gpus[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    SYSTEM_CALL("nvmlDeviceGetHandleByUUID");
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < lab.gpu_count; i++)
        if (!strcmp(lab.gpus[i].uuid, uuid)) { *device = &lab.gpus[i]; return NVML_SUCCESS; }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index) {
    DEVICE_CALL("nvmlDeviceGetIndex", dev);
    if (!index) return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned int)dev->index;
    return NVML_SUCCESS;
}

/* ---- device identity ---- */

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int length) {
    DEVICE_CALL("nvmlDeviceGetName", dev);
    return copy_text(name, length, dev->name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int length) {
    DEVICE_CALL("nvmlDeviceGetUUID", dev);
    return copy_text(uuid, length, dev->uuid);
}

static nvmlReturn_t fill_pci(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    unsigned int domain = 0, bus = 0, device = 0, function = 0;
    sscanf(dev->pci_bus_id, "%x:%x:%x.%x", &domain, &bus, &device, &function);
    pci->domain = domain;
    pci->bus = bus;
    pci->device = device;
    pci->pciDeviceId = dev->pci_device_id;
    pci->pciSubSystemId = dev->pci_subsystem_id;
    snprintf(pci->busId, sizeof pci->busId, "%.31s", dev->pci_bus_id);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04x:%02x:%02x.%x", domain & 0xffff, bus, device, function);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    DEVICE_CALL("nvmlDeviceGetPciInfo_v3", dev);
    return fill_pci(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    DEVICE_CALL("nvmlDeviceGetPciInfo_v2", dev);
    return fill_pci(dev, pci);
}

nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci) {
    DEVICE_CALL("nvmlDeviceGetPciInfo", dev);
    return fill_pci(dev, pci);
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor) {
    DEVICE_CALL("nvmlDeviceGetCudaComputeCapability", dev);
    if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    *major = dev->cc_major;
    *minor = dev->cc_minor;
    return NVML_SUCCESS;
}

/* ---- memory ---- */

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *memory) {
    DEVICE_CALL("nvmlDeviceGetMemoryInfo", dev);
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    /* v1 counts the driver's reservation as used, like the real driver */
    unsigned long long used = dev->memory_reserved + procs_used(dev);
    if (used > dev->memory_total) used = dev->memory_total;
    memory->total = dev->memory_total;
    memory->used = used;
    memory->free = dev->memory_total - used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *memory) {
    DEVICE_CALL("nvmlDeviceGetMemoryInfo_v2", dev);
    if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != NVML_MEMORY_V2_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long used = procs_used(dev);
    unsigned long long budget = dev->memory_total - dev->memory_reserved;
    if (used > budget) used = budget;
    memory->total = dev->memory_total;
    memory->reserved = dev->memory_reserved;
    memory->used = used;
    memory->free = budget - used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t dev, nvmlBAR1Memory_t *bar1) {
    DEVICE_CALL("nvmlDeviceGetBAR1MemoryInfo", dev);
    if (!bar1) return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->bar1_total) return NVML_ERROR_NOT_SUPPORTED;
    bar1->bar1Total = dev->bar1_total;
    bar1->bar1Used = 1048576ull; /* real cards show ~1 MiB in use when idle */
    bar1->bar1Free = dev->bar1_total - bar1->bar1Used;
    return NVML_SUCCESS;
}

/* ---- modes, power, temperature ---- */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
    DEVICE_CALL("nvmlDeviceGetMigMode", dev);
    if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->mig < 0) return NVML_ERROR_NOT_SUPPORTED;
    *current = *pending = (unsigned int)dev->mig;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, unsigned int *mode) {
    DEVICE_CALL("nvmlDeviceGetPersistenceMode", dev);
    if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
    *mode = (unsigned int)dev->persistence;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t dev, unsigned int *limit) {
    DEVICE_CALL("nvmlDeviceGetPowerManagementLimit", dev);
    if (!limit) return NVML_ERROR_INVALID_ARGUMENT;
    if (!dev->power_limit_mw) return NVML_ERROR_NOT_SUPPORTED;
    *limit = dev->power_limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned int *temp) {
    DEVICE_CALL("nvmlDeviceGetTemperature", dev);
    if (!temp || sensor != 0 /* NVML_TEMPERATURE_GPU */) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = dev->temperature_c;
    return NVML_SUCCESS;
}

/* ---- processes: pynvml's two-call protocol (count first, then the array) ---- */

static nvmlReturn_t list_procs(const proc_t *procs, int n, unsigned int *count, nvmlProcessInfo_t *infos) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    if (n == 0) { *count = 0; return NVML_SUCCESS; }
    if (!infos || *count < (unsigned int)n) { *count = (unsigned int)n; return NVML_ERROR_INSUFFICIENT_SIZE; }
    for (int i = 0; i < n; i++) {
        infos[i].pid = procs[i].pid;
        infos[i].usedGpuMemory = procs[i].used;
        infos[i].gpuInstanceId = 0xFFFFFFFFu;     /* no MIG */
        infos[i].computeInstanceId = 0xFFFFFFFFu;
    }
    *count = (unsigned int)n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    DEVICE_CALL("nvmlDeviceGetComputeRunningProcesses_v3", dev);
    return list_procs(dev->compute, dev->n_compute, count, infos);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    DEVICE_CALL("nvmlDeviceGetComputeRunningProcesses_v2", dev);
    return list_procs(dev->compute, dev->n_compute, count, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    DEVICE_CALL("nvmlDeviceGetGraphicsRunningProcesses_v3", dev);
    return list_procs(dev->graphics, dev->n_graphics, count, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t dev, unsigned int *count, nvmlProcessInfo_t *infos) {
    DEVICE_CALL("nvmlDeviceGetGraphicsRunningProcesses_v2", dev);
    return list_procs(dev->graphics, dev->n_graphics, count, infos);
}

/* ---- interconnect ---- */

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, unsigned int *active) {
    DEVICE_CALL("nvmlDeviceGetNvLinkState", dev);
    if (!active) return NVML_ERROR_INVALID_ARGUMENT;
    if (dev->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= NVML_NVLINK_MAX_LINKS || link >= (unsigned int)dev->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    *active = (dev->nvlink_down_mask >> link) & 1u ? 0u : 1u;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level) {
    DEVICE_CALL("nvmlDeviceGetTopologyCommonAncestor", a);
    if (!valid(b) || !level) return NVML_ERROR_INVALID_ARGUMENT;
    if (a == b) { *level = NVML_TOPOLOGY_INTERNAL; return NVML_SUCCESS; }
    int specific = lab.topo[a->index][b->index];
    *level = specific >= 0 ? specific : lab.topology;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int index, int *status) {
    DEVICE_CALL("nvmlDeviceGetP2PStatus", a);
    if (!valid(b) || !status || index < 0 || index > 4) return NVML_ERROR_INVALID_ARGUMENT;
    *status = lab.p2p;
    return NVML_SUCCESS;
}
