// libFuzzer's driver, which -sanitize=fuzzer links in. SwiftPM names an executable's entry
// point `<module>_main` and makes `main` that symbol, so libFuzzer's own `main` cannot be the
// entry point: each target's `<module>_main` calls the driver with its test function.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size));
