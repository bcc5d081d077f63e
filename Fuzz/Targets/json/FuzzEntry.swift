import FuzzProperties
import LibFuzzerDriver

/// libFuzzer calls this with each input: FuzzTarget.json's properties, trapping when one fails.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.json.fuzz(data, size)
    return 0
}

/// The fuzz-json executable's entry point (see LibFuzzerDriver.h).
@_cdecl("fuzz_json_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
}
