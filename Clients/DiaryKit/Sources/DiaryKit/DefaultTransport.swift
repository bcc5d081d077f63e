public import OpenAPIRuntime
#if canImport(OpenAPIURLSession)
import OpenAPIURLSession
#elseif canImport(OpenAPIAsyncHTTPClient)
import OpenAPIAsyncHTTPClient
#endif

/// The platform's HTTP transport: URLSession on Apple's platforms; async-http-client
/// elsewhere (Linux), where URLSession cannot serve.
public enum DefaultTransport {
    /// A new transport for this platform.
    public static func make() -> any ClientTransport {
        #if canImport(OpenAPIURLSession)
        URLSessionTransport()
        #else
        AsyncHTTPClientTransport()
        #endif
    }
}
