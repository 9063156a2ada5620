"""Which Level Zero loader a configured llama.cpp build links (arcops.llama.cmake_cache): the
cache's lines as CMake writes them, and a build that names none refused."""

import json

import pytest
from arcops.llama.cmake_cache import LoaderError, require_loader, ze_loader
from hypothesis import given
from hypothesis import strategies as st

from .helpers.ansible_run import needs_ansible, run_module

# As CMake writes its cache: a comment, then NAME:TYPE=VALUE.
CACHE = """# This is the CMakeCache file.
//Path to a library.
ZE_LOADER_LIB:FILEPATH=/usr/lib/x86_64-linux-gnu/libze_loader.so
GGML_SYCL:BOOL=ON
"""


@pytest.mark.parametrize(
    ("text", "loader"),
    [
        (CACHE, "/usr/lib/x86_64-linux-gnu/libze_loader.so"),
        ("ARCOPS_ZE_LOADER:FILEPATH=/opt/ze/libze_loader.so\n" + CACHE, "/opt/ze/libze_loader.so"),
        ("ZE_LOADER_LIB:FILEPATH=ZE_LOADER_LIB-NOTFOUND\n", ""),
        ("ZE_LOADER_LIB:FILEPATH=\n", ""),
        ("GGML_SYCL:BOOL=ON\n", ""),
        # Only a line of its own counts: a value that mentions the name is no loader.
        ("OTHER:STRING=ZE_LOADER_LIB:FILEPATH=/x\n", ""),
    ],
)
def test_the_loader_is_read_from_its_own_line(text, loader):
    assert ze_loader(text) == loader


def test_a_build_without_a_loader_is_refused_naming_the_source():
    with pytest.raises(LoaderError, match=r"^CMake found no Level Zero loader \(libze-dev\) for /src/b1: "):
        require_loader("ZE_LOADER_LIB:FILEPATH=ZE_LOADER_LIB-NOTFOUND\n", "/src/b1")


@given(st.text())
def test_any_cache_text_gives_a_path_or_nothing(text):
    assert "\n" not in ze_loader(text)


@needs_ansible
def test_the_module_reads_the_cache_or_refuses(tmp_path):
    (tmp_path / "CMakeCache.txt").write_text(CACHE)
    done = run_module("arcops_llama_loader", json.dumps({"build_dir": str(tmp_path), "src": "/src/b1"}))
    assert (done["changed"], done["loader"]) == (False, "/usr/lib/x86_64-linux-gnu/libze_loader.so")
    (tmp_path / "CMakeCache.txt").write_text("ZE_LOADER_LIB:FILEPATH=ZE_LOADER_LIB-NOTFOUND\n")
    bad = run_module("arcops_llama_loader", json.dumps({"build_dir": str(tmp_path), "src": "/src/b1"}))
    assert bad["failed"] and bad["msg"].startswith("CMake found no Level Zero loader (libze-dev) for /src/b1")
    gone = run_module("arcops_llama_loader", json.dumps({"build_dir": str(tmp_path / "none")}))
    assert gone["failed"] and gone["msg"].endswith(
        "CMakeCache.txt: cannot be read (No such file or directory)"
    )
