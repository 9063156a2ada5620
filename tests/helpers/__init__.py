"""Test helpers and stand-ins: fixture builders (bundles, kernel packages, llama.cpp trees, signed
apt repositories), fetchers of real Debian packages and PyPI sdists (cached), and the stand-ins for
what cannot run here (oneAPI's installer, Docker's repository, an image registry). The test files
import them; scripts/lab-up and the molecule scenarios run some as `python -m tests.helpers.NAME`."""
