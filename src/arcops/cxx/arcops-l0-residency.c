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
#define _GNU_SOURCE
#include <dlfcn.h>
#include <level_zero/ze_api.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARCOPS_L0_RESIDENCY_VERSION 1

typedef ze_result_t (*make_resident_fn)(ze_context_handle_t, ze_device_handle_t, void *, size_t);
typedef ze_result_t (*alloc_props_fn)(ze_context_handle_t, const void *, ze_memory_allocation_properties_t *,
                                      ze_device_handle_t *);
typedef ze_result_t (*sub_devices_fn)(ze_device_handle_t, uint32_t *, ze_device_handle_t *);

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

static int is_sub_device(sub_devices_fn list, ze_device_handle_t parent, ze_device_handle_t child) {
    ze_device_handle_t subs[64];
    uint32_t count = 0;
    if (list(parent, &count, NULL) != ZE_RESULT_SUCCESS || count == 0) return 0;
    if (count > 64) return 1;  // more than we can look at: count it as related (pass through)
    if (list(parent, &count, subs) != ZE_RESULT_SUCCESS) return 1;
    for (uint32_t i = 0; i < count; i++)
        if (subs[i] == child) return 1;
    return 0;
}

// 1 when the call makes another device's device allocation resident on this one.
static int peer_residency(ze_context_handle_t ctx, ze_device_handle_t device, const void *ptr) {
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
    ze_memory_allocation_properties_t props;
    memset(&props, 0, sizeof props);
    props.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
    ze_device_handle_t owner = NULL;
    if (props_fn(ctx, ptr, &props, &owner) != ZE_RESULT_SUCCESS) return 0;
    if (props.type != ZE_MEMORY_TYPE_DEVICE || owner == NULL || device == NULL || owner == device) return 0;
    return !is_sub_device(subs_fn, owner, device) && !is_sub_device(subs_fn, device, owner);
}

static ze_result_t filtered_make_resident(ze_context_handle_t ctx, ze_device_handle_t device, void *ptr,
                                          size_t size) {
    make_resident_fn real = atomic_load(&real_make_resident);
    if (!pass_all && peer_residency(ctx, device, ptr)) {
        atomic_fetch_add(&skipped, 1);
        return ZE_RESULT_SUCCESS;
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
