# The exit core's rules, checked on its archive (sampler/exit/CMakeLists.txt): none of its
# objects may reference a function that allocates, takes a lock, waits, or does I/O. The exit
# path runs on a vCPU thread while the guest is stopped, with a signal handler's constraints in
# spirit: a lock there can wait on a thread the host has descheduled, an allocation can take
# malloc's lock, and I/O can block for as long as a disk likes. What it may call: clock_gettime
# (vDSO), timer_settime (the re-check timer), atomics, and the layers below it (the vCPU
# snapshot, guest-memory walks, the ring), which keep the same rules on their exit-path calls.
#
#   cmake -DLIB=libhvprof_sampler_exit.a -DNM=nm -P check_exit_core.cmake
if(NOT LIB OR NOT NM)
  message(FATAL_ERROR "check_exit_core: LIB and NM are required")
endif()
execute_process(COMMAND ${NM} -u --format=posix ${LIB}
  OUTPUT_VARIABLE undefined RESULT_VARIABLE rc ERROR_VARIABLE nm_err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_exit_core: ${NM} ${LIB}: ${nm_err}")
endif()
set(forbidden
  # allocation
  malloc calloc realloc reallocarray free strdup strndup posix_memalign aligned_alloc memalign
  valloc mmap mmap64 munmap mremap asprintf vasprintf
  # locks and waits
  pthread_mutex_lock pthread_mutex_trylock pthread_mutex_timedlock pthread_rwlock_rdlock
  pthread_rwlock_wrlock pthread_cond_wait pthread_cond_timedwait pthread_spin_lock sem_wait
  sem_timedwait pthread_join nanosleep usleep sleep clock_nanosleep futex syscall
  # I/O: files, streams, descriptors
  open open64 openat openat64 creat close read write pread pread64 pwrite pwrite64 readv
  writev fopen fopen64 fdopen fclose fread fwrite fflush fputs fputc putc puts fprintf printf
  vfprintf vprintf dprintf perror fsync fdatasync ioctl send sendto recv recvfrom syslog)
string(REPLACE "\n" ";" lines "${undefined}")
set(bad "")
foreach(line IN LISTS lines)
  # "name U" (posix format; archive member headers end in ':')
  string(REGEX MATCH "^([A-Za-z0-9_.@]+) [Uw]" m "${line}")
  if(NOT m)
    continue()
  endif()
  string(REGEX REPLACE "@.*" "" name "${CMAKE_MATCH_1}")
  # the fortified variants (__printf_chk, __read_chk ...) are the same calls
  string(REGEX REPLACE "^__(.*)_chk$" "\\1" name "${name}")
  list(FIND forbidden "${name}" at)
  if(NOT at EQUAL -1)
    list(APPEND bad "${name}")
  endif()
endforeach()
if(bad)
  list(REMOVE_DUPLICATES bad)
  message(FATAL_ERROR "the exit core (sampler/exit/) calls ${bad}: the exit path may not "
                      "allocate, lock or do I/O (sampler/exit/core.h)")
endif()
