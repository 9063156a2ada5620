#!/bin/sh
# Configure a freshly built VM root ($1): network, ssh access for the lab key, quiet timers.
# Runs on the build host (vmdb2 shell step); ARCOPS_VM_PUBKEY is the lab's public key.
set -eu
root=$1

# DHCP on whatever the virtio NIC is called.
mkdir -p "$root/etc/systemd/network"
cat >"$root/etc/systemd/network/10-dhcp.network" <<'NET'
[Match]
Name=en* eth*

[Network]
DHCP=yes
NET
chroot "$root" systemctl enable systemd-networkd.service

# root logs in with the lab key only.
install -d -m 0700 "$root/root/.ssh"
install -m 0600 "$ARCOPS_VM_PUBKEY" "$root/root/.ssh/authorized_keys"
echo 'PasswordAuthentication no' >"$root/etc/ssh/sshd_config.d/10-arcops-lab.conf"

# Timers that would run apt behind the tests' back, and slow boots under emulation; e2scrub_reap
# (LVM snapshots: the VM has none) cost 4 s of every boot.
chroot "$root" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
  e2scrub_reap.service

# Kernel installs inside the VM: only the modules this VM needs in the initrd (3 min, not 8).
echo 'MODULES=dep' >"$root/etc/initramfs-tools/conf.d/10-arcops-lab.conf"

# No fsync per unpacked file (as in Debian's container images): kernel packages unpack thousands
# of files, each fsync costs ~4 ms under emulation, and the disk is a throwaway overlay.
echo 'force-unsafe-io' >"$root/etc/dpkg/dpkg.cfg.d/10-arcops-lab-unsafe-io"

# Docker's engine for the vllm_service watchdog scenario: installing it under emulation takes
# ~5 min a run, and the install is not what that scenario tests (the role still pins and holds
# it, and enables and starts it). Off at boot, so the other scenarios' VMs do not start it.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
chroot "$root" apt-get update -qq
# xz-utils and zstd come with Ubuntu (intel_stack unpacks and reads the bundle with them); the
# container scenario proves the role installs them where they are missing.
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  docker.io python3-requests unzip xz-utils zstd >/dev/null
chroot "$root" apt-get clean
rm -f "$root/usr/sbin/policy-rc.d"
chroot "$root" systemctl disable docker.service docker.socket containerd.service

# Ansible's modules run from zips that Python compiles again on every task; under emulation that
# is half a small task's time. A bytecode cache for zip imports (zipimport_cache.py) halves it.
site=$(chroot "$root" python3 -c 'import site; print(site.getsitepackages()[0])')
install -d "$root$site"
install -m 0644 "$(dirname "$0")/../zipimport-cache/zipimport_cache.py" \
  "$(dirname "$0")/../zipimport-cache/00-zipimport-cache.pth" "$root$site/"

# Every clone gets its own identity: a new host key and machine-id on first boot. One ed25519
# key: making the RSA and ECDSA keys as well (ssh-keygen -A) took ~10 s of each first boot.
rm -f "$root"/etc/ssh/ssh_host_*
echo 'HostKey /etc/ssh/ssh_host_ed25519_key' >"$root/etc/ssh/sshd_config.d/05-arcops-lab-hostkey.conf"
mkdir -p "$root/etc/systemd/system/ssh.service.d"
cat >"$root/etc/systemd/system/ssh.service.d/10-hostkeys.conf" <<'UNIT'
[Service]
ExecStartPre=
ExecStartPre=/bin/sh -c 'test -s /etc/ssh/ssh_host_ed25519_key || ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key'
ExecStartPre=/usr/sbin/sshd -t
UNIT
: >"$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
echo arcops-vm >"$root/etc/hostname"
