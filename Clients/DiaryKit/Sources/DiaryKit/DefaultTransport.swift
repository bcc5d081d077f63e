public import OpenAPIRuntime
#if canImport(OpenAPIURLSession)
import Foundation
import OpenAPIURLSession
#elseif canImport(OpenAPIAsyncHTTPClient)
import NIOCore
import OpenAPIAsyncHTTPClient
#endif

/// The platform's HTTP transport: URLSession on Apple's platforms; async-http-client
/// elsewhere (Linux), where URLSession cannot serve.
public enum DefaultTransport {
    /// A new transport for this platform. `timeout` bounds a request: on Apple's platforms
    /// the wait for data (`timeoutIntervalForRequest`); with async-http-client the whole
    /// request, which also bounds how long a refused connection is retried before failing.
    public static func make(timeout: Duration = .seconds(60)) -> any ClientTransport {
        let seconds = max(1, timeout.components.seconds)
        #if canImport(OpenAPIURLSession)
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForRequest = TimeInterval(seconds)
        return URLSessionTransport(configuration: .init(session: URLSession(configuration: configuration)))
        #else
        return AsyncHTTPClientTransport(configuration: .init(timeout: .seconds(seconds)))
        #endif
    }
}
