#!/bin/busybox sh
# /init of the Linux guests that hvprof boots on the test bed (L2; docs/linux.md "Test bed").
# What to run comes from the kernel command line: hvtest.plan=boot|work|sys|disk|root|python|containers|net|offcpu|panic|churn,
# hvtest.ms=N; hvtest.churn=N (plan=churn: how many short-lived processes);
# hvtest.debian=1 (plan=root) runs Debian's own python3, xz and sqlite3 beside the workloads.
# hvtest.stacks=1 leaves sleeping tasks behind and prints their kernel stacks as the kernel sees
# them (/proc/PID/stack), for the captured-guest tests (tests/linux/capture.sh).
# Everything the tests compare with the recording is printed as "HVTEST ..." lines.
# Those lines carry no kernel time stamp ("[   1.2] "): the test bed takes one inside a line for a
# kernel message that cut it (tb_each_line), so dmesg lines go out without theirs.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
plan=boot
ms=2000
end=reboot
stacks=0
debian=0
rootdev=/dev/vda
churn=5000
for a in $(cat /proc/cmdline); do
  case $a in
    hvtest.plan=*) plan=${a#*=} ;;
    hvtest.ms=*) ms=${a#*=} ;;
    hvtest.end=*) end=${a#*=} ;;
    hvtest.stacks=*) stacks=${a#*=} ;;
    hvtest.debian=*) debian=${a#*=} ;;
    hvtest.root=*) rootdev=${a#*=} ;;
    hvtest.churn=*) churn=${a#*=} ;;
  esac
done
# hvtest.plan=root (docs/virtio.md): from the initramfs, load the disk's and ext4's modules
# (Debian's own, from the kernel package), mount the ext4 root hvprof gives (/dev/vda, or
# hvtest.root=: /dev/vda1 on the GPT disk that boots its own grub.cfg, docs/disk-boot.md) and
# switch to it; the same script, run again as the disk's /init, then goes on from here.
# hvtest.plan=python and containers run from the same root (the Python interpreters, runc and
# the containers' bundles are there).
if { [ "$plan" = root ] || [ "$plan" = python ] || [ "$plan" = containers ]; } &&
  [ ! -e /hvtest-on-disk ]; then
  for m in virtio_ring virtio virtio_mmio virtio_blk crc32c_generic crc16 mbcache jbd2 ext4; do
    [ -f "/modules/$(uname -r)/$m.ko" ] || continue
    insmod "/modules/$(uname -r)/$m.ko" 2>/dev/null || echo "HVTEST root insmod $m failed"
  done
  for i in 1 2 3 4 5 6 7 8 9 10; do [ -b "$rootdev" ] && break; busybox usleep 100000; done
  mkdir -p /newroot
  if mount -t ext4 "$rootdev" /newroot; then
    echo "HVTEST root mounted $(grep ' /newroot ' /proc/mounts)"
    umount /proc /sys /dev
    exec switch_root /newroot /init
  fi
  echo "HVTEST root mount failed"
  dmesg | grep -i -E 'virtio|ext4|vda' | sed 's/^\[[ 0-9.]*\] //; s/^/HVTEST root dmesg /'
  echo "HVTEST done"
  reboot -f
fi
# Linux keeps the la57 CPU flag only when it runs with 5-level paging (early_identify_cpu).
paging=4-level
grep -q -w la57 /proc/cpuinfo && paging=5-level
pti=off
grep -q -w pti /proc/cpuinfo && pti=on
echo "HVTEST userspace release=$(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo) online=$(cat /sys/devices/system/cpu/online) paging=$paging pti=$pti plan=$plan shell=$$"
# The kernel's own account of a few of its symbols (run-time addresses, KASLR applied), which
# the tests compare with the symbols hvprof read from the guest's memory.
grep -E ' [Tt] (schedule|do_syscall_64|native_safe_halt|io_serial_in|clear_page_rep|entry_SYSCALL_64|__x64_sys_getppid)$' /proc/kallsyms |
  while read -r addr type name; do echo "HVTEST ksym $addr $type $name"; done
# A kernel module, as distributions load them (brd, a RAM disk: in both Debian kernels), and the
# kernel's own account of its code symbols, which the tests compare with what hvprof read.
if insmod "/modules/$(uname -r)/brd.ko" rd_nr=1 rd_size=8192 2>/dev/null; then
  echo "HVTEST kmod brd loaded"
  grep -E ' [Tt] [^ ]+[[:space:]]+\[brd\]$' /proc/kallsyms |
    while read -r addr type name mod; do echo "HVTEST kmodsym $addr $type $name"; done
else
  echo "HVTEST kmod brd failed"
fi
# The six workload programs side by side, for $ms ms each; their pids in $workloads.
start_workloads() {
  workloads=
  for w in busy threads libcall syscalls dlopen nofp; do
    "/bin/hv_$w" "$ms" &
    workloads="$workloads $!"
  done
}
case $plan in
  boot)
    /bin/hv_busy "$ms" ;;
  work)
    start_workloads
    # Writes to the RAM disk run the module's code (brd_submit_bio and what it calls).
    for i in 1 2 3 4; do dd if=/dev/zero of=/dev/ram0 bs=64k count=128 2>/dev/null; done &
    wait ;;
  sys)
    /bin/hv_syscalls "$ms" ;;
  churn)
    # A busy guest's process churn (docs/identities.md): the shell starts $churn short-lived
    # processes (hv_blip, 2 ms of work each) one after another while hv_busy works (niced: on
    # one vCPU it would halve the loop's share); then hv_busy goes on for $ms ms more, so the
    # long-lived process outlives them all.
    /bin/hv_busy 600000 nice &
    busy=$!
    i=0
    t0=$(cut -d' ' -f1 /proc/uptime)
    while [ $i -lt "$churn" ]; do /bin/hv_blip 2000; i=$((i + 1)); done
    echo "HVTEST churn started=$i from=$t0 to=$(cut -d' ' -f1 /proc/uptime)"
    busybox usleep $((ms * 1000))
    kill $busy
    wait $busy 2>/dev/null ;;
  panic)
    # A kernel panic with a workload running (docs/sampling.md, "A flight recorder"): the
    # magic SysRq crash, which panics the kernel that reads it (panic=-1: it restarts at once).
    /bin/hv_busy "$ms" &
    busybox usleep $((ms * 500))
    echo "HVTEST panicking"
    echo c > /proc/sysrq-trigger
    echo "HVTEST still running after the panic" ;;
  root)
    # Running from the disk: the workloads of plan=work, started from the ext4 root, and a
    # writer that keeps files going to the disk with fsync (the journal busy, for a kill
    # mid-write), until they end; then the root is left clean (read-only) for e2fsck.
    echo "HVTEST root running from $(grep ' / ' /proc/mounts | grep -v rootfs)"
    (i=0; while :; do
      dd if=/dev/urandom of=/data/f.$((i % 8)) bs=64k count=8 conv=fsync 2>/dev/null
      [ $i = 2 ] && echo "HVTEST-root-writing"
      i=$((i + 1))
    done) &
    writer=$!
    start_workloads
    # shellcheck disable=SC2086 # a list of pids
    wait $workloads
    # hvtest.debian=1: then Debian's own python3, xz and sqlite3, side by side for $ms ms (after
    # the workloads: on one vCPU beside them they would leave each too few samples).
    if [ "$debian" = 1 ]; then
      debian_pids=
      secs=$(( (ms + 999) / 1000 ))
      /bin/python3.11 -I -S -c "
import time
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
end = time.monotonic() + $secs
while time.monotonic() < end: fib(18)" &
      debian_pids="$debian_pids $!"
      # Small inputs: each xz and sqlite3 run ends soon after the $ms ms (under hvprof one xz
      # -6 of 2 MiB took 40 s of the guest's time).
      dd if=/dev/urandom of=/tmp/xz.in bs=64k count=4 2>/dev/null
      (end=$(( $(date +%s) + secs )); while [ "$(date +%s)" -lt $end ]; do
        /bin/xz -6 -T1 -c /tmp/xz.in >/dev/null; done) &
      debian_pids="$debian_pids $!"
      (end=$(( $(date +%s) + secs )); while [ "$(date +%s)" -lt $end ]; do
        /bin/sqlite3 :memory: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000) SELECT count(*), sum(x % 7) FROM c;" >/dev/null
      done) &
      debian_pids="$debian_pids $!"
      echo "HVTEST debian programs running for $secs s"
      # shellcheck disable=SC2086 # a list of pids
      wait $debian_pids
    fi
    kill $writer
    wait $writer 2>/dev/null
    sync
    ls /data | tr '\n' ' ' | sed 's/^/HVTEST root data /'
    echo
    mount -o remount,ro / && echo "HVTEST root clean" ;;
  python)
    # Python programs of known call chains (docs/python.md): /py/chains.py run by Debian 12's
    # python3.11 and, in the chroot of Debian 13's libc at /trixie, by its python3.13, side by
    # side for $ms ms; their pids on the console for the test.
    secs=$(( (ms + 999) / 1000 ))
    /bin/python3.11 -I -S /py/chains.py "$secs" &
    p311=$!
    chroot /trixie /usr/bin/python3.13 -I -S /py/chains.py "$secs" &
    p313=$!
    echo "HVTEST python pids 3.11=$p311 3.13=$p313"
    wait $p311 $p313
    echo "HVTEST python done" ;;
  containers)
    # Containers as Docker's cgroupfs driver has runc run them (docs/containers.md): Debian's
    # runc starts the bundles /ct/a and /ct/b of one static program, each in cgroup
    # /docker/<id> and its own pid, mount, ipc, uts, network and cgroup namespaces, beside the
    # same program outside any container; a quarter of the way, the first container's process is moved to a
    # third cgroup, as `echo PID > cgroup.procs` moves a process, and then told so through its
    # /flags. What the guest itself sees of each (/proc/PID/cgroup, NSpid) on the console.
    grep -q ' /sys/fs/cgroup ' /proc/mounts || mount -t cgroup2 cgroup2 /sys/fs/cgroup
    mkdir -p /run
    mount -t tmpfs tmpfs /run
    for c in a b; do
      rm -f "/ct/flags-$c/moved"
      sed -i "s/\"HVMS\"/\"$ms\"/" "/ct/$c/config.json"
      /bin/runc --root /run/runc run --bundle "/ct/$c" "hvtest-$c" </dev/null &
    done
    # Each container's process once it runs the program: the one of its cgroup that is pid 1
    # of a pid namespace of its own (runc's own processes pass through the cgroup first).
    for c in a b; do
      id=$(cat "/ct/$c/id")
      p=
      for i in $(seq 1 600); do
        for q in $(cat "/sys/fs/cgroup/docker/$id/cgroup.procs" 2>/dev/null); do
          ns=$(grep NSpid "/proc/$q/status" 2>/dev/null | tr '\t' ' ')
          case $ns in "NSpid: "*" 1") p=$q ;; esac
        done
        [ -n "$p" ] && grep -q hv_ctwork "/proc/$p/comm" 2>/dev/null && break
        p=
        busybox usleep 50000
      done
      [ -n "$p" ] || { echo "HVTEST ct $c never started"; continue; }
      eval "pid_$c=$p"
      echo "HVTEST ct $c pid=$p cgroup=$(cat /proc/$p/cgroup) $(grep NSpid /proc/$p/status | tr '\t' ' ')"
    done
    /bin/hv_ctwork "$ms" host &
    outside=$!
    echo "HVTEST ct host pid=$outside cgroup=$(cat /proc/$outside/cgroup)"
    busybox usleep $((ms * 250))
    idc=$(cat /ct/c.id)
    if [ -n "${pid_a:-}" ] && mkdir -p "/sys/fs/cgroup/docker/$idc" &&
      echo "$pid_a" >"/sys/fs/cgroup/docker/$idc/cgroup.procs"; then
      echo "HVTEST ct moved pid=$pid_a cgroup=$(cat /proc/$pid_a/cgroup)"
      touch /ct/flags-a/moved
    else
      echo "HVTEST ct move failed"
    fi
    wait
    echo "HVTEST ct done" ;;
  disk)
    # The virtio disk hvprof gives with --disk (docs/virtio.md), found through the ACPI tables
    # by Debian's own modules: read the label the test bed wrote at its start, write one back,
    # and keep the disk busy while hv_busy runs.
    for m in virtio_ring virtio virtio_mmio virtio_blk; do
      insmod "/modules/$(uname -r)/$m.ko" 2>/dev/null || echo "HVTEST disk insmod $m failed"
    done
    for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; busybox usleep 100000; done
    if [ -b /dev/vda ]; then
      echo "HVTEST disk size $(cat /sys/block/vda/size) label $(dd if=/dev/vda bs=16 count=1 2>/dev/null)"
      echo "HVTEST-WRITTEN-BY-THE-GUEST" | dd of=/dev/vda bs=512 seek=8 conv=fsync 2>/dev/null &&
        echo "HVTEST disk wrote"
      # The format flip (docs/security.md): a qcow2 header written over the first sector of this
      # raw disk, whose format hvprof probed. hvprof must refuse it (an I/O error) and keep the
      # label. The kernel's own I/O error line is kept off the console meanwhile (dmesg -n 1).
      lvl=$(cut -f1 /proc/sys/kernel/printk)
      dmesg -n 1
      # (busybox's dd may write through the page cache: conv=fsync makes the device's answer
      # the command's, and the label is read back with the cache dropped.)
      if { printf 'QFI\373\000\000\000\003'; head -c 504 /dev/zero; } |
        dd of=/dev/vda bs=512 count=1 oflag=direct conv=fsync 2>/dev/null; then
        echo "HVTEST disk flip written"
      else
        echo 3 >/proc/sys/vm/drop_caches
        echo "HVTEST disk flip refused label $(dd if=/dev/vda bs=16 count=1 iflag=direct 2>/dev/null)"
      fi
      dmesg -n "$lvl"
      /bin/hv_busy "$ms" &
      busy=$!
      while kill -0 $busy 2>/dev/null; do
        dd if=/dev/vda of=/dev/null bs=64k count=256 iflag=direct 2>/dev/null ||
          dd if=/dev/vda of=/dev/null bs=64k count=256 2>/dev/null
      done
      echo "HVTEST disk read done"
    else
      echo "HVTEST disk missing"
      dmesg | grep -i -E 'virtio|LNRO|ACPI (Error|Warning)' | sed 's/^\[[ 0-9.]*\] //; s/^/HVTEST disk dmesg /'
      ls /sys/bus/acpi/devices /sys/bus/platform/devices 2>/dev/null | tr '\n' ' ' |
        sed 's/^/HVTEST disk devices /'
      echo
    fi ;;
  offcpu)
    # Off-CPU time (docs/off-cpu.md): hv_offcpu's writer blocked in fsync on the virtio disk
    # beside its CPU-bound thread, for $ms ms, among 200 sleeping processes (a guest of a few
    # hundred tasks, whose every thread hvprof visits).
    for m in virtio_ring virtio virtio_mmio virtio_blk; do
      insmod "/modules/$(uname -r)/$m.ko" 2>/dev/null || echo "HVTEST offcpu insmod $m failed"
    done
    for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; busybox usleep 100000; done
    sleepers=
    for i in $(seq 1 200); do
      busybox sleep 3600 &
      sleepers="$sleepers $!"
    done
    echo "HVTEST offcpu tasks $(ls -d /proc/[0-9]* | wc -l)"
    /bin/hv_offcpu "$ms" /dev/vda
    # shellcheck disable=SC2086 # a list of pids
    kill $sleepers
    wait 2>/dev/null
    echo "HVTEST offcpu done" ;;
  net)
    # The network card hvprof gives with --net (docs/net.md), found through the ACPI tables by
    # Debian's own driver: an address from slirp's DHCP (busybox udhcpc), then a web server
    # (busybox httpd, a page and a CGI program that computes) on port 80, which the test bed
    # drives from L1 through the forwarded host port while hv_busy runs for $ms ms.
    for m in virtio_ring virtio virtio_mmio failover net_failover virtio_net; do
      [ -f "/modules/$(uname -r)/$m.ko" ] || continue
      insmod "/modules/$(uname -r)/$m.ko" 2>/dev/null || echo "HVTEST net insmod $m failed"
    done
    for i in $(seq 1 30); do [ -e /sys/class/net/eth0 ] && break; busybox usleep 100000; done
    ip link set lo up
    ip link set eth0 up
    echo "HVTEST net mac $(cat /sys/class/net/eth0/address 2>/dev/null)"
    cat >/tmp/dhcp.sh <<'DHCP'
#!/bin/sh
[ "$1" = bound ] || exit 0
ip addr add "$ip/${mask:-24}" dev "$interface"
[ -z "$router" ] || ip route add default via "$router"
echo "HVTEST net lease $ip router $router dns $dns" >/tmp/lease
DHCP
    chmod +x /tmp/dhcp.sh
    udhcpc -i eth0 -n -q -t 5 -s /tmp/dhcp.sh >/dev/null 2>&1
    cat /tmp/lease 2>/dev/null || echo "HVTEST net no lease"
    mkdir -p /www/cgi-bin
    echo "HVTEST-PAGE" >/www/index.html
    cat >/www/cgi-bin/work <<'CGI'
#!/bin/sh
i=0
while [ $i -lt 3000 ]; do i=$((i + 1)); done
printf 'Content-Type: text/plain\r\n\r\nHVTEST-CGI %s\n' "$i"
CGI
    printf '#!/bin/sh\ntouch /tmp/stop\nprintf "Content-Type: text/plain\\r\\n\\r\\nstopping\\n"\n' \
      >/www/cgi-bin/stop
    chmod +x /www/cgi-bin/work /www/cgi-bin/stop
    httpd -p 80 -h /www && echo "HVTEST net serving"
    # Until the test bed says it is done (GET /cgi-bin/stop), at most $ms ms, hv_busy beside.
    /bin/hv_busy "$ms" &
    busy=$!
    while [ ! -e /tmp/stop ] && kill -0 $busy 2>/dev/null; do busybox usleep 200000; done
    kill $busy 2>/dev/null
    wait $busy 2>/dev/null
    echo "HVTEST net done $([ -e /tmp/stop ] && echo stopped || echo timed-out)" ;;
  *)
    echo "HVTEST unknown plan $plan" ;;
esac
if [ "$stacks" = 1 ]; then
  # Tasks asleep in three kinds of kernel path: a timed sleep, a read of an empty pipe, and a
  # kernel thread (kthreadd, pid 2). They stay asleep until the capture at the end.
  sleep 100000 &
  sleepy=$!
  mkfifo /tmp/hv_fifo
  sh -c 'exec 3<>/tmp/hv_fifo; exec cat <&3' &
  reader=$!
  busybox usleep 300000
  for p in $sleepy $reader 2; do
    echo "HVTEST kstack $p $(cat /proc/$p/comm)"
    while read -r _ frame; do echo "HVTEST kframe $p $frame"; done </proc/$p/stack
    # Its state as ps shows it (stat's third field), and the system call it sleeps in with the
    # user stack pointer and PC the kernel saved at its entry (/proc/PID/syscall: "nr args...
    # sp pc"), for the off-CPU visit's threads (docs/off-cpu.md).
    echo "HVTEST kstate $p $(cut -d')' -f2 /proc/$p/stat | cut -d' ' -f2)"
    echo "HVTEST ksyscall $p $(cat /proc/$p/syscall)"
  done
  # The file those tasks run, as the guest sees it: the capture reads it from the page cache.
  echo "HVTEST file /bin/busybox ino=$(stat -c %i /bin/busybox) size=$(stat -c %s /bin/busybox) crc32=$(crc32 /bin/busybox | cut -d' ' -f1)"
fi
echo "HVTEST done"
sync
# reboot=k on the command line: the i8042 reset line; poweroff: ACPI S5 (PM1a_CNT). exec: pid 1
# itself becomes "reboot", the task a capture at the end finds running (tests/tools/capture/capture.h).
if [ "$end" = poweroff ]; then exec poweroff -f; else exec reboot -f; fi
