#!/bin/busybox sh
# /init of the outer VM (L1) of the Linux test bed (docs/linux.md "Test bed"). It loads KVM
# (kvm-amd on QEMU's emulated SVM) and virtio-blk, unpacks its inputs from /dev/vda (a tar:
# hvprof and its libraries, the reference QEMU, the guest kernels and initramfs, /scenarios),
# runs every scenario, and writes each one's results as a tar into its own slot of /dev/vdb as
# soon as it finishes (slot 0: L1's own log), so a scenario that kills L1 loses only itself.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do
  insmod "/modules/$m.ko" || echo "L1: insmod $m failed"
done
# nested.sh: a command of the host's, on the host's own file system (9p, tag hostroot) with
# L1's /dev (and its /dev/kvm), /proc, /sys and a fresh /tmp; its output and exit status go to
# the folder named on the command line, then L1 powers off. No scenarios.
nested=$(sed -n 's/.*hvtest\.nested=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$nested" ]; then
  echo "L1: /dev/kvm $( [ -c /dev/kvm ] && echo ready || echo MISSING ) at $(cut -d' ' -f1 /proc/uptime) s"
  ip link set lo up 2>/dev/null
  mkdir -p /host
  # cache=mmap: the page cache only where a program maps a file shared and writable; every
  # other read and write goes to the host at once, so the host sees each result as it is written.
  if mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=mmap hostroot /host; then
    mkdir -p /dev/pts /dev/shm
    # What udev would add to a devtmpfs: bash's process substitution opens /dev/fd/N.
    ln -sf /proc/self/fd /dev/fd
    ln -sf /proc/self/fd/0 /dev/stdin
    ln -sf /proc/self/fd/1 /dev/stdout
    ln -sf /proc/self/fd/2 /dev/stderr
    mount --rbind /dev /host/dev
    mount -t devpts devpts /host/dev/pts 2>/dev/null
    mount -t proc proc /host/proc
    mount -t sysfs sys /host/sys
    mkdir -p /hosttmp
    mount --bind /host/tmp /hosttmp
    mount -t tmpfs -o size=4g tmp /host/tmp
    # A command whose files live in the host's /tmp (a clone made in `mktemp -d`): that folder
    # stays the host's, the rest of /tmp is L1's own.
    case "$nested" in /tmp/?*)
      top=${nested#/tmp/}
      top=${top%%/*}
      mkdir -p "/host/tmp/$top"
      mount --bind "/hosttmp/$top" "/host/tmp/$top"
      ;;
    esac
    mount -t tmpfs shm /host/dev/shm 2>/dev/null
    mount -t tmpfs run /host/run
    (while sleep 60; do echo "L1: nested command still running at $(cut -d' ' -f1 /proc/uptime) s"; done) &
    chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root TERM=dumb LANG=C.UTF-8 /bin/bash "$nested/command" >"/host$nested/log" 2>&1
    echo $? >"/host$nested/status"
    kill $! 2>/dev/null
    sync
    umount -l /host/tmp /host/run /host/sys /host/proc /hosttmp 2>/dev/null
    umount -l /host/dev 2>/dev/null
    umount /host 2>/dev/null || umount -l /host
  else
    echo "L1: cannot mount the host's file system (9p)"
  fi
  echo "L1: nested command done at $(cut -d' ' -f1 /proc/uptime) s"
  poweroff -f
fi
n=0
while [ ! -b /dev/vdb ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
tar xf /dev/vda -C / || echo "L1: cannot unpack the inputs"
slot_mb=$(cat /slot_mb)
fault_attempts=$(cat /fault_attempts 2>/dev/null || echo 3)
mkdir -p /out/l1 /tmp
export PATH=/bin:/qemu/bin
export LD_LIBRARY_PATH=/qemu/lib

save() { # save SLOT DIR: the results of one scenario (or L1's) into its slot
  tar cf /tmp/slot.tar -C /out "$2"
  if [ "$(wc -c </tmp/slot.tar)" -gt $((slot_mb * 1048576)) ]; then
    echo "results of $2 exceed ${slot_mb} MiB" >/out/"$2"/too-big
    tar cf /tmp/slot.tar -C /out "$2/too-big" "$2/status" "$2/summary.txt"
  fi
  dd if=/tmp/slot.tar of=/dev/vdb bs=1M seek=$(($1 * slot_mb)) conv=notrunc 2>/dev/null
  sync
}

echo "L1: /dev/kvm $( [ -c /dev/kvm ] && echo ready || echo MISSING ) at $(cut -d' ' -f1 /proc/uptime) s" |
  tee /out/l1/l1.txt
# Where L1's KVM code lies, to read the registers of a triple-fault report against
# (docs/linux.md, "Triple faults on the test bed").
grep -E ' (__svm_vcpu_run|svm_vcpu_run)([[:space:]]|$)' /proc/kallsyms | sed 's/^/L1: kallsyms /' >>/out/l1/l1.txt
# L1's own clock: its TSC calibration, its clocksource and when KVM came up against them (KVM
# takes the guests' TSC rate from the calibration it finds loaded; docs/linux.md, "L1's clock").
l1_clock() {
  dmesg | grep -E 'tsc:|clocksource: Switched|TSC|kvm: Nested' | sed "s/^/L1: $1 /" >>/out/l1/l1.txt
}
l1_clock clock
save 0 l1
# One attempt of the scenario in $name, $cmd, ... (the variables of the loop below) into $d.
# The guest's web server, driven through the forwarded port while hvprof (pid $2) runs: 20
# pages and 20 CGI requests, each answered or not, into $d/net-load.txt.
net_load_run() {
  local port=$1 pid=$2 n=0 ok=0 cgi=0 i
  ip link set lo up 2>/dev/null
  # The guest serves: the test bed's /init says so, or a Debian system's unit once
  # multi-user.target is reached (debian_disk.sh).
  while kill -0 "$pid" 2>/dev/null && [ $n -lt 3000 ] &&
    ! grep -q -E "HVTEST (net serving|systemd multi-user)" "$d/console.log" 2>/dev/null; do
    usleep 100000
    n=$((n + 1))
  done
  # busybox's wget has no timeout of its own: timeout(1) bounds each request.
  for i in $(seq 1 20); do
    timeout 30 wget -q -O - "http://127.0.0.1:$port/index.html" 2>/dev/null |
      grep -q HVTEST-PAGE && ok=$((ok + 1))
    timeout 60 wget -q -O - "http://127.0.0.1:$port/cgi-bin/work" 2>/dev/null |
      grep -q "HVTEST-CGI 3000" && cgi=$((cgi + 1))
  done
  echo "pages 20 answered $ok cgi 20 answered $cgi" >"$d/net-load.txt"
  timeout 30 wget -q -O /dev/null "http://127.0.0.1:$port/cgi-bin/stop" 2>/dev/null
}

# The control after a recording without user-mode exits (docs/linux.md, "Runs without
# user-mode exits"): at once, in the same L1, QEMU/KVM boots the same kernel and workloads
# with its vCPU threads kicked at the recording's rate (kick.c), into $1; the kicker's ticks
# missed against taken show whether L1's timers were starved for the reference VMM too.
starved_control() {
  local o=$1 hz p kp
  hz=$(echo " $opts " | sed -n 's/.* --hz \([0-9]*\) .*/\1/p')
  hz=${hz:-1000}
  mkdir -p "$o"
  # Under the watchdog's 180 s of console silence (run.sh): the control prints only at its end.
  timeout 150 qemu-system-x86_64 -accel kvm -cpu host -machine pc -smp "$vcpus" -m "$mem" \
    -name hvtest,debug-threads=on -nodefaults -display none -no-reboot -L /qemu/share \
    -serial "file:$o/console.log" \
    -kernel "/guest/vmlinuz-$kernel" -initrd /guest/l2.cpio.gz -append "$cmdline" \
    >"$o/summary.txt" 2>&1 &
  p=$!
  hvtest_kick $p "$hz" $((${mem%M} * 1048576)) 2>"$o/kick.txt" &
  kp=$!
  wait $p
  echo $? >"$o/status"
  wait $kp
  cat "$o/kick.txt" >>"$o/summary.txt"
  echo "L1: scenario $name: its control: $(cat "$o/kick.txt")" | tee -a /out/l1/l1.txt
}

run_scenario() {
  # A scenario with the test bed's disk (docs/virtio.md) gets a fresh 64 MiB image labelled at
  # its start; its first 8 KiB are kept for the test after the run.
  disk=/tmp/hvtest-disk.img
  case " $opts " in *" --disk $disk"*)
    rm -f "$disk"
    dd if=/dev/zero of="$disk" bs=1M count=0 seek=64 2>/dev/null
    printf 'HVPROF-DISK-TEST' | dd of="$disk" conv=notrunc 2>/dev/null ;;
  esac
  # A scenario that boots from the ext4 root (hvtest.plan=root) gets a fresh copy of it.
  root=/tmp/hvtest-root.img
  case " $opts " in *" --disk $root"*) zcat /guest/root.ext4.gz >"$root" ;; esac
  # ... or its qcow2 copy, which hvprof must never write.
  qroot=/tmp/hvtest-root.qcow2
  case " $opts " in *" --disk $qroot"*) cp /guest/root.qcow2 "$qroot" ;; esac
  # HVTEST_KILL_AT=WORD in the environment words: hvprof is killed (SIGKILL) half a second
  # after the guest's console shows WORD, mid-run (docs/virtio.md, "A kill mid-write").
  kill_at=$(echo " $envs " | sed -n 's/.* HVTEST_KILL_AT=\([^ ]*\) .*/\1/p')
  # HVTEST_NET_LOAD=PORT: once the guest serves (plan=net), requests to its web server through
  # the host port hvprof forwards, from here, while it is profiled (docs/net.md).
  net_load=$(echo " $envs " | sed -n 's/.* HVTEST_NET_LOAD=\([0-9]*\) .*/\1/p')
  # shellcheck disable=SC2086 # $opts is a word list on purpose
  case $cmd in
    qemu)
      # debug-threads: vCPU threads named "CPU n/KVM", which the kicker looks for.
      timeout 300 qemu-system-x86_64 -accel kvm -cpu host -machine pc -smp "$vcpus" -m "$mem" \
        -name hvtest,debug-threads=on -nodefaults -display none -no-reboot -L /qemu/share \
        -serial "file:$d/console.log" \
        -kernel "/guest/vmlinuz-$kernel" -initrd /guest/l2.cpio.gz -append "$cmdline" $opts \
        >"$d/summary.txt" 2>&1 &
      pid=$!
      # HVTEST_KICK_HZ=N: the reference under hvprof's load, its vCPU threads kicked at N Hz
      # and its guest's RAM read (kick.c); what the kicker did goes to the summary.
      hz=$(echo " $envs " | sed -n 's/.* HVTEST_KICK_HZ=\([0-9]*\) .*/\1/p')
      if [ -n "$hz" ]; then
        hvtest_kick $pid "$hz" $((${mem%M} * 1048576)) 2>"$d/kick.txt" &
        kick=$!
      fi
      wait $pid
      st=$?
      [ -z "$hz" ] || { wait $kick; cat "$d/kick.txt" >>"$d/summary.txt"; }
      (exit $st) ;;
    record)
      env $envs hvprof record -o "$d/rec.fxt" --kernel "/guest/vmlinuz-$kernel" \
        --initrd /guest/l2.cpio.gz --cmdline "$cmdline" --vcpus "$vcpus" --mem "$mem" \
        --console "$d/console.log" $opts >"$d/summary.txt" 2>&1 &
      pid=$!
      if [ -n "$kill_at" ]; then
        n=0
        while kill -0 $pid 2>/dev/null && [ $n -lt 3000 ] &&
          ! grep -q "$kill_at" "$d/console.log" 2>/dev/null; do
          usleep 100000
          n=$((n + 1))
        done
        usleep 500000
        kill -9 $pid 2>/dev/null && echo "killed (SIGKILL) ${n}00 ms after the start" >"$d/killed"
      fi
      [ -z "$net_load" ] || net_load_run "$net_load" $pid
      wait $pid ;;
    qemu-disk)
      # QEMU/KVM booting the same Debian system disk, the reference for record-disk: the kernel,
      # initrd and command line of its boot entry (debian_disk.sh writes them beside the disk),
      # the disk on virtio-blk (snapshot=on: never written), user networking with the same
      # forwarded port, driven by the same requests. QEMU keeps the snapshot's writes in a
      # temporary file in /var/tmp (block.c, create_tmp_file: always there), which L1 lacks.
      mkdir -p /var/tmp
      timeout 420 qemu-system-x86_64 -accel kvm -cpu host -machine pc -smp "$vcpus" -m "$mem" \
        -name hvtest,debug-threads=on -nodefaults -display none -no-reboot -L /qemu/share \
        -serial "file:$d/console.log" \
        -kernel "/guest/$kernel.vmlinuz" -initrd "/guest/$kernel.initrd" \
        -append "$(cat "/guest/$kernel.cmdline")" \
        -drive "file=/guest/$kernel.qcow2,if=virtio,format=qcow2,snapshot=on" \
        -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:${net_load:-8080}-:80" \
        -device virtio-net-pci,netdev=n0,romfile= $opts >"$d/summary.txt" 2>&1 &
      pid=$!
      [ -z "$net_load" ] || net_load_run "$net_load" $pid
      wait $pid ;;
    record-disk)
      # The disk boots its own default entry (docs/disk-boot.md): no kernel, initrd or command
      # line given; the scenario's command line is the one its grub.cfg holds (prepare.sh).
      env $envs hvprof record -o "$d/rec.fxt" --vcpus "$vcpus" --mem "$mem" \
        --console "$d/console.log" $opts >"$d/summary.txt" 2>&1 &
      pid=$!
      [ -z "$net_load" ] || net_load_run "$net_load" $pid
      wait $pid ;;
    *)
      env $envs hvprof "$cmd" --kernel "/guest/vmlinuz-$kernel" --initrd /guest/l2.cpio.gz \
        --cmdline "$cmdline" --vcpus "$vcpus" --mem "$mem" --console "$d/console.log" $opts \
        >"$d/summary.txt" 2>&1 ;;
  esac
  echo $? >"$d/status"
  case " $opts " in *" --disk $disk"*) dd if="$disk" of="$d/disk.head" bs=512 count=16 2>/dev/null ;; esac
  # The root image after the run, as e2fsck sees it: as it is (-n: nothing changed), and
  # after its journal is replayed as a mount would (a kill leaves one to replay).
  case " $opts " in *" --disk $root"*)
    e2fsck -fn "$root" >"$d/fsck.txt" 2>&1
    echo $? >"$d/fsck.status"
    e2fsck -E journal_only -y "$root" >"$d/fsck-replay.txt" 2>&1
    e2fsck -fn "$root" >>"$d/fsck-replay.txt" 2>&1
    echo $? >"$d/fsck-replay.status"
    rm -f "$root" ;;
  esac
  case " $opts " in *" --disk $qroot"*)
    if cmp -s "$qroot" /guest/root.qcow2; then echo unchanged; else echo CHANGED; fi >"$d/qcow2.image"
    rm -f "$qroot" ;;
  esac
}

# A recording without user-mode exits: under 1 % user samples with more ticks missed than taken,
# or under 0.1 % whatever was missed (the summary's total line: user kernel idle missed; the
# test's tb_starved() in testbed.c, the same rule).
starved() {
  awk 'BEGIN { s = 1 }
       /^  total / { u = $2; k = $3; i = $4; m = $5
                     if (u * 100 < k && (m > u + k + i || u * 1000 < k)) s = 0 }
       END { exit s }' "$1"
}

# L1's KVM clock events while a scenario runs, into $d/kvm-clock.txt (docs/linux.md, "L1's
# clock"): the master clock's updates, the guest's TSC offset writes and TSC matching, and each
# kvmclock page KVM writes for it. A guest that marks its TSC unstable by "frequency skew" saw
# kvm-clock and its TSC disagree; these show whether KVM moved either under it.
clock_trace() { # clock_trace on|off
  local t=/sys/kernel/tracing e
  [ -d $t/events/kvm ] || mount -t tracefs nodev $t 2>/dev/null
  [ -d $t/events/kvm ] || return 0
  if [ "$1" = on ]; then
    echo 0 >$t/tracing_on
    echo >$t/trace
    for e in kvm_update_master_clock kvm_track_tsc kvm_write_tsc_offset kvm_pvclock_update; do
      echo 1 >$t/events/kvm/$e/enable
    done
    echo 1 >$t/tracing_on
  else
    echo 0 >$t/tracing_on
    grep -v '^#' $t/trace | head -c 1048576 >"$d/kvm-clock.txt"
  fi
}

# run_scenario with a line on L1's console every 60 s while it runs, the guest console's last
# line: a scenario that the test bed's watchdog or timeout ends (L1 then writes no results) still
# shows in L1's console where its guest was, and run.sh takes a console silent for three periods
# for an L1 that hangs as a whole.
run_scenario_beating() {
  local what=$1 beat
  (while sleep 60; do
    echo "L1: $what still running at $(cut -d' ' -f1 /proc/uptime) s; its console: $(tail -n 1 "$d/console.log" 2>/dev/null | cut -c1-160)"
  done) &
  beat=$!
  clock_trace on
  run_scenario
  clock_trace off
  kill "$beat" 2>/dev/null
  wait "$beat" 2>/dev/null || true
}

# The warm-up (docs/linux.md, "The first run after L1's boot"): one run of /warmup's scenario
# line before the scenarios, its results dropped but for its sample counts in L1's log.
if [ -s /warmup ]; then
  IFS='|' read -r name cmd kernel vcpus mem cmdline opts envs </warmup
  d=/out/warmup
  mkdir -p "$d"
  t0=$(cut -d' ' -f1 /proc/uptime)
  cp /proc/interrupts "$d/irq.before"
  run_scenario_beating warm-up
  cp /proc/interrupts "$d/irq.after"
  t1=$(cut -d' ' -f1 /proc/uptime)
  total=$(grep -m1 '^  total' "$d/summary.txt" | tr -s ' ')
  echo "L1: warm-up ($cmd, $kernel, $vcpus vCPUs) exit $(cat "$d/status") after $t0..$t1 s: $total" |
    tee -a /out/l1/l1.txt
  # Without user samples (the columns: total user kernel ...), what reached L1's CPUs.
  if [ "$(echo "$total" | cut -d' ' -f3)" = 0 ]; then
    for w in before after; do
      grep -E '^ *(LOC|RES|CAL|TLB):' "$d/irq.$w" | tr -s ' ' | sed "s/^/L1: warm-up irq $w: /"
    done | tee -a /out/l1/l1.txt
  fi
  rm -rf "$d"
  save 0 l1
fi

# One scenario per line: name|command|kernel|vcpus|mem|cmdline|options[|environment]
#   command: record or run (hvprof), qemu (the reference VMM: QEMU with KVM, same kernel)
#   environment: VAR=VALUE words for the command (e.g. HVPROF_NO_SYNC_REGS=1)
k=0
while IFS='|' read -r name cmd kernel vcpus mem cmdline opts envs; do
  case $name in ''|\#*) continue ;; esac
  k=$((k + 1))
  d=/out/$name
  mkdir -p "$d"
  t0=$(cut -d' ' -f1 /proc/uptime)
  echo "L1: scenario $name ($cmd, $kernel, $vcpus vCPUs) at $t0 s"
  # A guest that triple-faults on the emulated SVM (docs/linux.md, "Triple faults on the test
  # bed"), or a recording without user-mode exits (the platform's starvation, "Runs without
  # user-mode exits"), is booted again, $fault_attempts boots in all at most; each such
  # attempt's summary and console are kept under $d/fault.N or $d/starved.N for the test to
  # print.
  # L1's interrupt counts around the scenario: what reached L1's CPUs while L2 ran (printed by
  # the test when a run has no user-mode samples).
  cp /proc/interrupts "$d/irq.before"
  a=1
  while :; do
    run_scenario_beating "scenario $name"
    if [ $a -ge "$fault_attempts" ]; then
      [ "$cmd" = record ] && starved "$d/summary.txt" && starved_control "$d/control"
      break
    fi
    if grep -q 'guest stopped (triple-fault)' "$d/summary.txt" 2>/dev/null; then
      why=fault what=triple-faulted
    elif [ "${cmd%-disk}" = record ] && starved "$d/summary.txt"; then
      why=starved what="had no user-mode exits"
    else
      break
    fi
    mkdir -p "$d/$why.$a"
    mv "$d/summary.txt" "$d/console.log" "$d/$why.$a/" 2>/dev/null
    [ "$why.$cmd" = starved.record ] && starved_control "$d/$why.$a/control"
    rm -f "$d/rec.fxt"
    echo "L1: scenario $name $what (attempt $a), booting it again" | tee -a /out/l1/l1.txt
    a=$((a + 1))
  done
  t1=$(cut -d' ' -f1 /proc/uptime)
  cp /proc/interrupts "$d/irq.after"
  echo "$t0 $t1" >"$d/time"
  echo "L1: scenario $name exit $(cat "$d/status") after $t0..$t1 s" | tee -a /out/l1/l1.txt
  save "$k" "$name"
  rm -rf "$d"
done </scenarios
{
  echo "L1: clock at the end: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
  dmesg | grep -i -E 'unstable|backwards|skew' | sed 's/^/L1: clock at the end: /'
} >>/out/l1/l1.txt
echo "L1: done at $(cut -d' ' -f1 /proc/uptime) s" | tee -a /out/l1/l1.txt
save 0 l1
poweroff -f
