/* The source interface's own code: none but this check that the header stands alone (a source
 * includes it first). The core's side of it is sampler/sources.c. */
#include "sampler/source/source.h"
