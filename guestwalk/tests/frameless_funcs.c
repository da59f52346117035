/* Real functions whose machine code the frameless-scan tests decode. Compiled twice (see
 * CMakeLists.txt), at -O1 and -O2 with -fno-omit-frame-pointer, the flags of code built to be
 * profiled: GCC still gives leaf functions no frame. Never called; only their bytes are used.
 * The functions keep their source order (-fno-toplevel-reorder), and fl_end marks the end. */
#define FL_CAT2(a, b) a##_##b
#define FL_CAT(a, b)  FL_CAT2(a, b)
#define FL_NAME(n)    FL_CAT(n, FL_SUFFIX)

volatile unsigned long FL_NAME(fl_sink);
void fl_call(unsigned long n);

void FL_NAME(fl_spin)(unsigned long n);
void FL_NAME(fl_sum)(const unsigned long *p, unsigned long n);
void FL_NAME(fl_framed)(unsigned long n);
void FL_NAME(fl_end)(void);

/* A frameless leaf with a loop (hv_busy's `spin`). */
__attribute__((noinline)) void FL_NAME(fl_spin)(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        FL_NAME(fl_sink) += i;
}

/* A frameless leaf with branches inside its loop and two ways out. */
__attribute__((noinline)) void FL_NAME(fl_sum)(const unsigned long *p, unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        if (p[i] & 1)
            s += p[i] * 3;
        else
            s ^= p[i];
    }
    FL_NAME(fl_sink) = s;
}

/* A function with a frame (it calls). */
__attribute__((noinline)) void FL_NAME(fl_framed)(unsigned long n)
{
    FL_NAME(fl_spin)(n);
    fl_call(n);
    FL_NAME(fl_sink)++;
}

__attribute__((noinline)) void FL_NAME(fl_end)(void)
{
    fl_call(0);
}
