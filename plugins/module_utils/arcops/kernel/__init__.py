"""Kernel and firmware packages: Intel's bundle and its lock, .deb repacking for noble, dpkg state, GRUB."""
