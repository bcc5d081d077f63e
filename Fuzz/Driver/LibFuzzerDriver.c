// The declaration in include/LibFuzzerDriver.h is all this target is for; libFuzzer defines it.
#include "LibFuzzerDriver.h"
