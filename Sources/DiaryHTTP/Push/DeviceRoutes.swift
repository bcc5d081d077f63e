import DiaryCore
import DiaryModels
import Hummingbird

/// The caller's devices for push notifications, each bound to the session that registered
/// it: sign-out removes that session's devices, and an ended session's get no more pushes.
struct DeviceRoutes {
    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.put("me/devices/:deviceToken") { request, context -> HTTPResponse.Status in
            let token = try Self.deviceToken(context)
            let body = try await request.decode(as: RegisterDeviceRequest.self, context: context)
            guard ["sandbox", "production"].contains(body.environment) else {
                throw Problem.validation(field: "environment", "must be sandbox or production")
            }
            try await DeviceRepository(scope: context.scope).register(token: token, environment: body.environment)
            return .noContent
        }

        router.delete("me/devices/:deviceToken") { _, context -> HTTPResponse.Status in
            try await DeviceRepository(scope: context.scope).remove(token: try Self.deviceToken(context))
            return .noContent
        }

        router.get("me/devices") { _, context -> DeviceList in
            try await DeviceRepository(scope: context.scope).list()
        }
    }

    /// 64 to 200 hex digits in either case, kept lower-case.
    static func deviceToken(_ context: some RequestContext) throws -> String {
        guard let text = context.parameters.get("deviceToken"), (64...200).contains(text.utf8.count),
              text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0 | 0x20) })
        else {
            throw Problem.validation(field: "deviceToken", "must be 64 to 200 hexadecimal characters")
        }
        return text.lowercased()
    }
}
