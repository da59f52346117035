// A Java program of known call chains for hvprof's Java tests (java/tests, tests/linux): main
// starts three threads whose loops stay hot (compiled by C1 and C2 after warm-up) and prints
// "ready" once they run. Lines matter: the tests check leaf lines.
public final class Chains {
    static volatile long sink;

    static long leafA(long x) {
        long s = x;
        for (int i = 0; i < 1000; i++)
            s = s * 6364136223846793005L + 1442695040888963407L; // leafA's hot line
        return s;
    }

    static long middleA(long x) {
        return leafA(x) ^ x;
    }

    static long outerA(long x) {
        return middleA(x + 1);
    }

    static double leafB(double x) {
        double s = x;
        for (int i = 0; i < 500; i++)
            s = Math.sqrt(s + i); // leafB's hot line
        return s;
    }

    static double outerB(double x) {
        return leafB(x) + 1;
    }

    // 30 frames of itself above leafA: the benchmark's deep stack (bench/java_bench.c)
    static long deep(int n, long x) {
        if (n == 0)
            return leafA(x);
        return deep(n - 1, x + 1) + 1;
    }

    public static void main(String[] args) throws Exception {
        Thread a = new Thread(() -> {
            for (long i = 0;; i++)
                sink += outerA(i);
        }, "chains-a");
        Thread b = new Thread(() -> {
            for (double d = 0;; d += 1)
                sink += (long)outerB(d);
        }, "chains-b");
        Thread c = new Thread(() -> {
            for (long i = 0;; i++)
                sink += deep(29, i);
        }, "chains-deep");
        c.setDaemon(true);
        a.setDaemon(true);
        b.setDaemon(true);
        a.start();
        b.start();
        c.start();
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(Long.parseLong(args.length > 0 ? args[0] : "600000"));
    }
}
