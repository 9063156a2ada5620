// arcops-l0-residency: an LD_AUDIT library that keeps Level Zero device allocations resident only
// on the device that owns them.
//
// On multi-GPU Arc boxes the runtime in Intel's vLLM image makes every device allocation resident
// on every device of the context (zeContextMakeMemoryResident with the peer card), and the xe
// driver pins host RAM for each of those peer mappings: 24-26 GiB per card on a dual B60 serving a
// 32B model, 11 GiB with this filter and oneCCL's thresholds (docs/host-ram.md).
//
// How: the dynamic loader reports every symbol bound to libze_loader.so (rtld-audit(7):
// la_objopen marks the loader, la_symbind64 sees each binding). Only zeContextMakeMemoryResident
// is replaced; every other binding keeps its own address, so other calls cost nothing. The
// replacement asks Level Zero which device owns the pointer (zeMemGetAllocProperties) and skips
// the call, answering success, when the allocation is device memory owned by another device that
// is neither the target nor a sub-device of it (or it of the target). Host and shared
// allocations, unknown pointers, and every failed query pass through unchanged.
//
// Environment:
//   ARCOPS_L0_PEER_RESIDENT=1   pass every call through (peer residency asked for explicitly)
//   ARCOPS_L0_RESIDENCY_LOG=1   one line on stderr when loaded, when the loader is seen, and at
//                               exit with the calls kept and skipped (the marker tests look for)
// A Level Zero loader without a symbol the filter needs leaves every call unchanged.
//
// Build: gcc with the flags in arcops.vllm.residency_shim.CFLAGS (every build goes through it).
// It needs no Level Zero headers: the few types it uses are declared below as ze_api.h (Level
// Zero 1.x, a stable ABI) declares them, so a box whose pinned runtime holds libze1 needs no
// headers package that would want another libze1. Built with -DARCOPS_L0_CHECK_ABI next to the
// real ze_api.h, the declarations are checked against it (the unit tests do).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCOPS_L0_RESIDENCY_VERSION 1

// --- Level Zero, as ze_api.h declares it -------------------------------------------------------
typedef int arcops_ze_result_t;  // an enum: int-sized
typedef struct arcops_ze_context *arcops_ze_context_t;
typedef struct arcops_ze_device *arcops_ze_device_t;
enum {
    ARCOPS_ZE_RESULT_SUCCESS = 0,
    ARCOPS_ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES = 0x17,
    ARCOPS_ZE_MEMORY_TYPE_DEVICE = 2,
};
typedef struct {
    int stype;  // ze_structure_type_t
    void *pNext;
    int type;  // ze_memory_type_t
    uint64_t id;
    uint64_t pageSize;
} arcops_ze_alloc_props_t;

#ifdef ARCOPS_L0_CHECK_ABI
#include <level_zero/ze_api.h>
#include <stddef.h>
_Static_assert(sizeof(ze_result_t) == sizeof(arcops_ze_result_t), "ze_result_t");
_Static_assert((int)ZE_RESULT_SUCCESS == (int)ARCOPS_ZE_RESULT_SUCCESS, "ZE_RESULT_SUCCESS");
_Static_assert((int)ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES ==
                   (int)ARCOPS_ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
               "ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES");
_Static_assert((int)ZE_MEMORY_TYPE_DEVICE == (int)ARCOPS_ZE_MEMORY_TYPE_DEVICE, "ZE_MEMORY_TYPE_DEVICE");
_Static_assert(sizeof(ze_structure_type_t) == sizeof(int) && sizeof(ze_memory_type_t) == sizeof(int), "enums");
_Static_assert(sizeof(ze_memory_allocation_properties_t) == sizeof(arcops_ze_alloc_props_t), "props size");
_Static_assert(offsetof(ze_memory_allocation_properties_t, pNext) == offsetof(arcops_ze_alloc_props_t, pNext), "pNext");
_Static_assert(offsetof(ze_memory_allocation_properties_t, type) == offsetof(arcops_ze_alloc_props_t, type), "type");
_Static_assert(offsetof(ze_memory_allocation_properties_t, pageSize) == offsetof(arcops_ze_alloc_props_t, pageSize),
               "pageSize");
_Static_assert(sizeof(ze_context_handle_t) == sizeof(arcops_ze_context_t), "context handle");
_Static_assert(sizeof(ze_device_handle_t) == sizeof(arcops_ze_device_t), "device handle");
#endif

typedef arcops_ze_result_t (*make_resident_fn)(arcops_ze_context_t, arcops_ze_device_t, void *, size_t);
typedef arcops_ze_result_t (*alloc_props_fn)(arcops_ze_context_t, const void *, arcops_ze_alloc_props_t *,
                                             arcops_ze_device_t *);
typedef arcops_ze_result_t (*sub_devices_fn)(arcops_ze_device_t, uint32_t *, arcops_ze_device_t *);

static _Atomic(make_resident_fn) real_make_resident;
static _Atomic(alloc_props_fn) real_alloc_props;
static _Atomic(sub_devices_fn) real_sub_devices;
static char loader_path[4096];  // where the application's namespace loaded it
static atomic_ulong kept, skipped;
static int logging, pass_all;

static int flag(const char *name) {
    const char *v = getenv(name);
    return v != NULL && v[0] == '1';
}

static int is_loader(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libze_loader.so", strlen("libze_loader.so")) == 0;
}

// Resolved at the first filtered call, outside the dynamic loader's callbacks: the copy of the
// loader the application uses (RTLD_NOLOAD: never a second copy), found from this audit
// library's own namespace.
static void *loader_symbol(const char *name) {
    if (loader_path[0] == '\0') return NULL;
    void *handle = dlmopen(LM_ID_BASE, loader_path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) return NULL;
    void *symbol = dlsym(handle, name);
    dlclose(handle);  // drops the reference NOLOAD took; the application's stays
    return symbol;
}

static int is_sub_device(sub_devices_fn list, arcops_ze_device_t parent, arcops_ze_device_t child) {
    arcops_ze_device_t subs[64];
    uint32_t count = 0;
    if (list(parent, &count, NULL) != ARCOPS_ZE_RESULT_SUCCESS || count == 0) return 0;
    if (count > 64) return 1;  // more than we can look at: count it as related (pass through)
    if (list(parent, &count, subs) != ARCOPS_ZE_RESULT_SUCCESS) return 1;
    for (uint32_t i = 0; i < count; i++)
        if (subs[i] == child) return 1;
    return 0;
}

// 1 when the call makes another device's device allocation resident on this one.
static int peer_residency(arcops_ze_context_t ctx, arcops_ze_device_t device, const void *ptr) {
    alloc_props_fn props_fn = atomic_load(&real_alloc_props);
    if (props_fn == NULL) {
        props_fn = (alloc_props_fn)loader_symbol("zeMemGetAllocProperties");
        if (props_fn == NULL) return 0;
        atomic_store(&real_alloc_props, props_fn);
    }
    sub_devices_fn subs_fn = atomic_load(&real_sub_devices);
    if (subs_fn == NULL) {
        subs_fn = (sub_devices_fn)loader_symbol("zeDeviceGetSubDevices");
        if (subs_fn == NULL) return 0;
        atomic_store(&real_sub_devices, subs_fn);
    }
    arcops_ze_alloc_props_t props;
    memset(&props, 0, sizeof props);
    props.stype = ARCOPS_ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    arcops_ze_device_t owner = NULL;
    if (props_fn(ctx, ptr, &props, &owner) != ARCOPS_ZE_RESULT_SUCCESS) return 0;
    if (props.type != ARCOPS_ZE_MEMORY_TYPE_DEVICE || owner == NULL || device == NULL || owner == device) return 0;
    return !is_sub_device(subs_fn, owner, device) && !is_sub_device(subs_fn, device, owner);
}

static arcops_ze_result_t filtered_make_resident(arcops_ze_context_t ctx, arcops_ze_device_t device, void *ptr,
                                                 size_t size) {
    make_resident_fn real = atomic_load(&real_make_resident);
    if (!pass_all && peer_residency(ctx, device, ptr)) {
        atomic_fetch_add(&skipped, 1);
        return ARCOPS_ZE_RESULT_SUCCESS;
    }
    atomic_fetch_add(&kept, 1);
    return real(ctx, device, ptr, size);
}

unsigned int la_version(unsigned int version) {
    logging = flag("ARCOPS_L0_RESIDENCY_LOG");
    pass_all = flag("ARCOPS_L0_PEER_RESIDENT");
    if (logging)
        fprintf(stderr, "arcops-l0-residency %d: loaded%s\n", ARCOPS_L0_RESIDENCY_VERSION,
                pass_all ? " (ARCOPS_L0_PEER_RESIDENT=1: every call passes through)" : "");
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
    (void)cookie;
    if (map->l_name != NULL && is_loader(map->l_name) && lmid == LM_ID_BASE &&
        strlen(map->l_name) < sizeof loader_path) {
        strcpy(loader_path, map->l_name);
        if (logging) fprintf(stderr, "arcops-l0-residency: filtering %s\n", map->l_name);
        return LA_FLG_BINDTO;
    }
    return LA_FLG_BINDFROM;
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned int *flags, const char *symname) {
    (void)ndx;
    (void)refcook;
    (void)defcook;
    // No per-call hooks (la_pltenter/la_pltexit): every binding stays a direct call.
    *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
    if (strcmp(symname, "zeContextMakeMemoryResident") != 0) return sym->st_value;
    atomic_store(&real_make_resident, (make_resident_fn)sym->st_value);
    return (uintptr_t)filtered_make_resident;
}

__attribute__((destructor)) static void report(void) {
    if (logging && (atomic_load(&kept) || atomic_load(&skipped)))
        fprintf(stderr, "arcops-l0-residency: %lu residency calls kept, %lu peer calls skipped\n",
                atomic_load(&kept), atomic_load(&skipped));
}
