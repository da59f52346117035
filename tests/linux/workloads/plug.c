/* libhvplug.so: the library hv_dlopen loads at run time, built at -O2 with frame pointers (its
 * leaf plug_spin gets no frame):
 *   plug_work -> plug_loop -> plug_spin
 * plug_work is exported (in the dynamic symbol table, named from guest memory alone); the other
 * two are static (named with --symbols). */
volatile unsigned long plug_sink;

__attribute__((noinline)) static void plug_spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        plug_sink += i * 3;
}

__attribute__((noinline)) static void plug_loop(void)
{
    plug_spin(40000);
    plug_sink++;
}

void plug_work(long end_ms, long (*now_ms)(void));
void plug_work(long end_ms, long (*now_ms)(void))
{
    while (now_ms() < end_ms)
        plug_loop();
}
