"""The test boxes' bytecode cache for zip imports (images/zipimport-cache/zipimport_cache.py).

Each case runs a fresh interpreter that loads the cache the way the image's .pth file does,
points it at a temporary folder and imports a module from a zip, like an AnsiballZ payload.
"""

import subprocess
import sys
import zipfile
from pathlib import Path

IMAGES = Path(__file__).resolve().parents[1] / "images" / "zipimport-cache"

RUN = """
import sys
sys.path.insert(0, sys.argv[1])
import zipimport_cache
zipimport_cache.CACHE_DIR = sys.argv[2]
compiled = []
original = zipimport_cache._compile
zipimport_cache._compile = lambda p, s: compiled.append(p) or original(p, s)
sys.path.insert(0, sys.argv[3])
import payload
print(payload.answer(), len(compiled))
try:
    payload.fail()
except ZeroDivisionError as e:
    import traceback
    print(traceback.extract_tb(e.__traceback__)[-1].filename)
"""

MODULE = "def answer():\n    return {answer}\n\n\ndef fail():\n    return 1 / 0\n"


def make_zip(tmp_path, name, answer=42):
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("payload.py", MODULE.format(answer=answer))
    return path


def run(zip_path, cache):
    out = subprocess.run(
        [sys.executable, "-S", "-B", "-c", RUN, str(IMAGES), str(cache), str(zip_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    first, filename = out.stdout.splitlines()
    answer, compiled = first.split()
    return int(answer), int(compiled), filename


def test_first_import_compiles_and_stores_then_a_hit_skips_the_compile(tmp_path):
    cache = tmp_path / "cache"
    assert run(make_zip(tmp_path, "a.zip"), cache)[:2] == (42, 1)
    assert len(list(cache.iterdir())) == 1
    # Another payload zip with the same source (a new AnsiballZ temp path): a hit.
    answer, compiled, filename = run(make_zip(tmp_path, "b.zip"), cache)
    assert (answer, compiled) == (42, 0)
    assert filename == str(tmp_path / "b.zip" / "payload.py"), "tracebacks name the importing zip"


def test_changed_source_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    run(make_zip(tmp_path, "a.zip"), cache)
    assert run(make_zip(tmp_path, "b.zip", answer=7), cache)[:2] == (7, 1)
    assert len(list(cache.iterdir())) == 2


def test_a_corrupt_entry_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    run(make_zip(tmp_path, "a.zip"), cache)
    (entry,) = cache.iterdir()
    entry.write_bytes(b"\x00not marshal data")
    assert run(make_zip(tmp_path, "b.zip"), cache)[:2] == (42, 1)
    assert run(make_zip(tmp_path, "c.zip"), cache)[:2] == (42, 0), "the entry was rewritten"


def test_marshal_data_that_is_not_code_is_ignored(tmp_path):
    import marshal

    cache = tmp_path / "cache"
    run(make_zip(tmp_path, "a.zip"), cache)
    (entry,) = cache.iterdir()
    entry.write_bytes(marshal.dumps({"not": "code"}))
    assert run(make_zip(tmp_path, "b.zip"), cache)[:2] == (42, 1)


def test_a_cache_path_that_is_a_file_still_imports(tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("in the way\n")
    # Without a cache, Python 3.11's zipimport compiles a module twice per import: once to
    # find its file name, once to run it. With one, the second is already a hit.
    assert run(make_zip(tmp_path, "a.zip"), cache)[:2] == (42, 2)
    assert run(make_zip(tmp_path, "b.zip"), cache)[:2] == (42, 2)
    assert not list(tmp_path.glob("cache.*")), "no stray temporary files"


def test_the_pth_file_loads_the_cache_from_a_site_folder(tmp_path):
    """The boxes get the two files in a site-packages folder (the VM image installs them, the
    containers mount them): Python's site processing alone must switch the cache on."""
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    for name in ("zipimport_cache.py", "00-zipimport-cache.pth"):
        (site_dir / name).write_bytes((IMAGES / name).read_bytes())
    probe = (
        "import site, sys, zipimport; site.addsitedir(sys.argv[1]);"
        " print(zipimport._compile_source.__module__)"
    )
    cmd = [sys.executable, "-S", "-B", "-c", probe, str(site_dir)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "zipimport_cache"
