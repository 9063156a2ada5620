// arcops Level Zero device allocations for SYCL code (llama.cpp's SYCL backend, the probe).
//
// On multi-GPU Arc boxes sycl::malloc_device makes the xe driver keep a copy of every VRAM
// allocation in host RAM (DMA-buf/TTM staging); zeMemAllocDevice on the same device does not.
// arcops_ze_malloc_device() allocates through Level Zero when the queue is on a Level Zero
// device and falls back to sycl::malloc_device otherwise (OpenCL/CPU device, Level Zero call
// failed, or GGML_SYCL_USE_LEVEL_ZERO_API=0). arcops_ze_free_device() frees either kind: it
// remembers which pointers came from Level Zero. Pointers from zeMemAllocDevice are ordinary
// USM device pointers, so SYCL kernels and memcpy use them unchanged.
#pragma once

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <sycl/sycl.hpp>
#include <unordered_map>

// The patcher recognises a source tree it already changed by this macro.
#define ARCOPS_ZE_ALLOC_VERSION 1

enum class arcops_ze_path { level_zero, sycl };

namespace arcops_ze_detail {

struct registry {
    std::mutex lock;
    std::unordered_map<void *, ze_context_handle_t> owner;  // pointer -> Level Zero context
};

inline registry & pointers() {
    static registry r;
    return r;
}

// Same switch name as upstream llama.cpp's own Level Zero path: "0" turns it off.
inline bool level_zero_disabled() {
    const char * v = std::getenv("GGML_SYCL_USE_LEVEL_ZERO_API");
    return v != nullptr && v[0] == '0';
}

inline void * level_zero_alloc(std::size_t size, const sycl::queue & q) {
    auto ctx = sycl::get_native<sycl::backend::ext_oneapi_level_zero>(q.get_context());
    auto dev = sycl::get_native<sycl::backend::ext_oneapi_level_zero>(q.get_device());
#ifdef ZE_RELAXED_ALLOCATION_LIMITS_EXP_NAME
    // Model buffers exceed the 4 GiB default limit; sycl::malloc_device relaxes it too.
    ze_relaxed_allocation_limits_exp_desc_t relaxed = {
        ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC, nullptr,
        ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE};
    ze_device_mem_alloc_desc_t desc = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, &relaxed, 0, 0};
#else
    ze_device_mem_alloc_desc_t desc = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
#endif
    void * ptr = nullptr;
    if (zeMemAllocDevice(ctx, &desc, size, 64, dev, &ptr) != ZE_RESULT_SUCCESS || ptr == nullptr) {
        return nullptr;
    }
    std::lock_guard<std::mutex> guard(pointers().lock);
    pointers().owner[ptr] = ctx;
    return ptr;
}

}  // namespace arcops_ze_detail

// Allocate size bytes of device memory for q's device; *taken (optional) says which path won.
inline void * arcops_ze_malloc_device(std::size_t size, const sycl::queue & q, arcops_ze_path * taken = nullptr) {
    if (!arcops_ze_detail::level_zero_disabled() && q.get_backend() == sycl::backend::ext_oneapi_level_zero) {
        try {
            if (void * ptr = arcops_ze_detail::level_zero_alloc(size, q)) {
                if (taken) *taken = arcops_ze_path::level_zero;
                return ptr;
            }
        } catch (const sycl::exception &) {
            // Interop unavailable: fall through to SYCL.
        }
    }
    if (taken) *taken = arcops_ze_path::sycl;
    return sycl::malloc_device(size, q);
}

// Free memory from arcops_ze_malloc_device, or any other USM allocation: `where` is the queue or
// context the call site gave sycl::free.
template <typename QueueOrContext> inline void arcops_ze_free_device(void * ptr, const QueueOrContext & where) {
    if (ptr == nullptr) return;
    ze_context_handle_t ctx = nullptr;
    {
        std::lock_guard<std::mutex> guard(arcops_ze_detail::pointers().lock);
        auto it = arcops_ze_detail::pointers().owner.find(ptr);
        if (it != arcops_ze_detail::pointers().owner.end()) {
            ctx = it->second;
            arcops_ze_detail::pointers().owner.erase(it);
        }
    }
    if (ctx != nullptr) {
        zeMemFree(ctx, ptr);
    } else {
        sycl::free(ptr, where);
    }
}
