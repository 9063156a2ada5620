// arcops-alloc-probe: what one device allocation costs in host RAM, per allocation path.
//
// Allocates N GiB on one device with sycl::malloc_device, with zeMemAllocDevice, and through
// arcops_ze_malloc_device (the helper the patched llama.cpp uses), writes zeros so the memory is
// committed, and reports for each the drop in MemAvailable and the growth of this process's
// drm-total-gtt (/proc/self/fdinfo): the xe driver's host-RAM mirror of VRAM shows in both, not
// in VmRSS. Prints one JSON object; `arcops alloc-probe verdict` judges it.
//
// Exit codes: 0 measured on a Level Zero GPU (all three paths ran); 1 an allocation or a
// measurement failed; 2 usage error; 3 no SYCL device at all (nothing measured); 4 a SYCL device
// but no Level Zero device: the sycl path and the helper (which fell back to SYCL) were measured.
#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "arcops-ze-alloc.hpp"

namespace {

constexpr int EXIT_MEASURED = 0, EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_NO_DEVICE = 3, EXIT_NO_LEVEL_ZERO = 4;

std::string json_string(const std::string & s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

long long mem_available_bytes() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    long long kib = -1;
    std::string unit;
    while (f >> key >> kib >> unit) {
        if (key == "MemAvailable:") return kib * 1024;
    }
    return -1;
}

long long unit_bytes(const std::string & unit) {
    if (unit == "KiB") return 1024LL;
    if (unit == "MiB") return 1024LL * 1024;
    if (unit == "GiB") return 1024LL * 1024 * 1024;
    return 1;
}

// Sum of drm-total-gtt over this process's DRM clients (one client can have several fds).
long long drm_total_gtt_bytes() {
    std::map<std::string, long long> per_client;
    DIR * dir = opendir("/proc/self/fdinfo");
    if (dir == nullptr) return 0;
    while (dirent * e = readdir(dir)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/fdinfo/") + e->d_name);
        std::string line, client;
        long long gtt = -1;
        while (std::getline(f, line)) {
            std::istringstream in(line);
            std::string key, unit;
            long long value = 0;
            in >> key >> value >> unit;
            if (key == "drm-client-id:") client = std::to_string(value);
            if (key == "drm-total-gtt:") gtt = value * unit_bytes(unit);
        }
        if (gtt >= 0) per_client[client.empty() ? e->d_name : client] = gtt;
    }
    closedir(dir);
    long long total = 0;
    for (const auto & kv : per_client) total += kv.second;
    return total;
}

struct sample {
    long long mem_available, gtt;
};

sample take_sample(int settle_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    return {mem_available_bytes(), drm_total_gtt_bytes()};
}

struct result {
    std::string method, path, error;
    bool ran = false, ok = false;
    long long host_ram = 0, gtt = 0, host_ram_after_free = 0;
};

std::string to_json(const result & r) {
    std::ostringstream o;
    o << "{\"method\": " << json_string(r.method) << ", \"ran\": " << (r.ran ? "true" : "false")
      << ", \"ok\": " << (r.ok ? "true" : "false");
    if (!r.path.empty()) o << ", \"path\": " << json_string(r.path);
    if (r.ok) {
        o << ", \"mem_available_drop_bytes\": " << r.host_ram << ", \"drm_total_gtt_growth_bytes\": " << r.gtt
          << ", \"mem_available_drop_after_free_bytes\": " << r.host_ram_after_free;
    }
    if (!r.error.empty()) o << ", \"error\": " << json_string(r.error);
    return o.str() + "}";
}

using alloc_fn = void * (*) (std::size_t, sycl::queue &, std::string &);
using free_fn = void (*)(void *, sycl::queue &);

result measure(const std::string & method, std::size_t bytes, sycl::queue & q, alloc_fn alloc, free_fn release,
               int settle_ms) {
    result r;
    r.method = method;
    r.ran = true;
    try {
        sample before = take_sample(settle_ms);
        void * ptr = alloc(bytes, q, r.path);
        if (ptr == nullptr) {
            r.error = "allocation returned null";
            return r;
        }
        q.memset(ptr, 0, bytes).wait();  // commit the pages, as a model load does
        sample held = take_sample(settle_ms);
        release(ptr, q);
        sample after = take_sample(settle_ms);
        r.host_ram = before.mem_available - held.mem_available;
        r.gtt = held.gtt - before.gtt;
        r.host_ram_after_free = before.mem_available - after.mem_available;
        r.ok = before.mem_available >= 0 && held.mem_available >= 0;
        if (!r.ok) r.error = "MemAvailable missing from /proc/meminfo";
    } catch (const std::exception & e) {
        r.error = e.what();
    }
    return r;
}

void * alloc_sycl(std::size_t n, sycl::queue & q, std::string & path) {
    path = "sycl";
    return sycl::malloc_device(n, q);
}
void free_sycl(void * p, sycl::queue & q) { sycl::free(p, q); }

void * alloc_level_zero(std::size_t n, sycl::queue & q, std::string & path) {
    path = "level_zero";
    return arcops_ze_detail::level_zero_alloc(n, q);
}
void * alloc_helper(std::size_t n, sycl::queue & q, std::string & path) {
    arcops_ze_path taken;
    void * p = arcops_ze_malloc_device(n, q, &taken);
    path = taken == arcops_ze_path::level_zero ? "level_zero" : "sycl";
    return p;
}
void free_helper(void * p, sycl::queue & q) { arcops_ze_free_device(p, q); }

std::string backend_name(sycl::backend b) {
    switch (b) {
        case sycl::backend::ext_oneapi_level_zero: return "level_zero";
        case sycl::backend::opencl: return "opencl";
        default: return "other";
    }
}

std::string level_zero_driver_status() {
    ze_result_t r = zeInit(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "zeInit failed: 0x%x", static_cast<unsigned>(r));
        return buf;
    }
    uint32_t drivers = 0;
    zeDriverGet(&drivers, nullptr);
    return "zeInit ok, " + std::to_string(drivers) + " driver(s)";
}

int usage(const char * msg) {
    std::fprintf(stderr, "arcops-alloc-probe: %s\nusage: arcops-alloc-probe [--gib N] [--device INDEX] [--settle-ms MS]\n", msg);
    return EXIT_USAGE;
}

}  // namespace

int main(int argc, char ** argv) {
    double gib = 4;
    int device_index = -1, settle_ms = 300;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) return usage(("missing value for " + a).c_str());
        char * end = nullptr;
        const char * v = argv[++i];
        if (a == "--gib") {
            gib = std::strtod(v, &end);
            if (*end || !(gib > 0)) return usage("--gib needs a positive number");
        } else if (a == "--device") {
            device_index = static_cast<int>(std::strtol(v, &end, 10));
            if (*end || device_index < 0) return usage("--device needs an index from 0");
        } else if (a == "--settle-ms") {
            settle_ms = static_cast<int>(std::strtol(v, &end, 10));
            if (*end || settle_ms < 0) return usage("--settle-ms needs a number >= 0");
        } else {
            return usage(("unknown option " + a).c_str());
        }
    }
    const std::size_t bytes = static_cast<std::size_t>(gib * 1024 * 1024 * 1024);

    std::vector<sycl::device> devices = sycl::device::get_devices();
    std::ostringstream list;
    int chosen = -1;
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const auto & d = devices[i];
        bool l0_gpu = d.get_backend() == sycl::backend::ext_oneapi_level_zero && d.is_gpu();
        if (chosen < 0 && l0_gpu) chosen = static_cast<int>(i);
        list << (i ? ", " : "") << "{\"index\": " << i << ", \"name\": "
             << json_string(d.get_info<sycl::info::device::name>()) << ", \"backend\": "
             << json_string(backend_name(d.get_backend())) << ", \"gpu\": " << (d.is_gpu() ? "true" : "false")
             << "}";
    }
    if (device_index >= 0) {
        if (device_index >= static_cast<int>(devices.size())) return usage("--device index out of range");
        chosen = device_index;
    } else if (chosen < 0 && !devices.empty()) {
        chosen = 0;
    }

    std::vector<result> results;
    std::string outcome, device_json = "null";
    int code;
    if (chosen < 0) {
        outcome = "no-sycl-device";
        code = EXIT_NO_DEVICE;
    } else {
        sycl::queue q(devices[chosen]);
        device_json = std::to_string(chosen);
        bool level_zero = q.get_backend() == sycl::backend::ext_oneapi_level_zero;
        results.push_back(measure("sycl_malloc_device", bytes, q, alloc_sycl, free_sycl, settle_ms));
        if (level_zero) {
            results.push_back(measure("ze_mem_alloc_device", bytes, q, alloc_level_zero, free_helper, settle_ms));
        } else {
            result skipped;
            skipped.method = "ze_mem_alloc_device";
            skipped.error = "device is not on the Level Zero backend";
            results.push_back(skipped);
        }
        results.push_back(measure("arcops_ze_malloc_device", bytes, q, alloc_helper, free_helper, settle_ms));
        code = level_zero ? EXIT_MEASURED : EXIT_NO_LEVEL_ZERO;
        outcome = level_zero ? "measured" : "no-level-zero-device";
        for (const auto & r : results) {
            if (r.ran && !r.ok) {
                code = EXIT_FAILED;
                outcome = "failed";
            }
        }
    }

    std::printf("{\"probe\": \"arcops-alloc-probe\", \"format\": 1, \"outcome\": %s, \"exit_code\": %d, "
                "\"bytes\": %zu, \"level_zero_driver\": %s, \"devices\": [%s], \"device\": %s, \"results\": [",
                json_string(outcome).c_str(), code, bytes, json_string(level_zero_driver_status()).c_str(),
                list.str().c_str(), device_json.c_str());
    for (std::size_t i = 0; i < results.size(); ++i) std::printf("%s%s", i ? ", " : "", to_json(results[i]).c_str());
    std::printf("]}\n");
    return code;
}
