import DiaryCore
import Hummingbird
import Logging
import PostgresClient

/// Turns every error into a problem+json response, so clients never see SQL, stack
/// traces or bind values; anything unexpected is logged with the request id.
struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let problem as Problem {
            return try problem.response(from: request, context: context)
        } catch let error as DomainError {
            let problem = ProblemMapping.problem(for: error)
            if error.sqlState != nil { AppMetrics.recordDatabaseRefusal(problem.code) }
            if problem.status == .internalServerError {
                context.logger.error("inconsistent state", metadata: ["error": "\(error)", "detail": "\(error.detail)", "path": "\(request.uri.path)"])
            }
            return try problem.response(from: request, context: context)
        } catch let error as PostgresError {
            AppMetrics.recordDatabaseError(error)
            let problem = ProblemMapping.problem(for: error)
            if problem.status == .internalServerError {
                context.logger.error("database error", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            } else if problem.status.code >= 500 {
                context.logger.warning("database unavailable", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            }
            return try problem.response(from: request, context: context)
        } catch let error as HTTPError {
            if error.status == .notFound, let allowed = AllowedMethods.methods(for: request.uri.path), !allowed.contains(request.method) {
                let problem = Problem(
                    .methodNotAllowed, detail: "this route does not accept \(request.method)",
                    headers: [.allow: allowed.map(\.rawValue).joined(separator: ", ")]
                )
                return try problem.response(from: request, context: context)
            }
            return try ProblemMapping.problem(for: error).response(from: request, context: context)
        } catch let error as AppleKeysUnavailable {
            return try ProblemMapping.problem(for: error).response(from: request, context: context)
        } catch {
            context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))", "path": "\(request.uri.path)"])
            return try Problem.internalError().response(from: request, context: context)
        }
    }
}
