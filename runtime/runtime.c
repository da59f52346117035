/* The runtime interface's own code: none but this check that its header stands alone. */
#include "runtime/runtime.h"
