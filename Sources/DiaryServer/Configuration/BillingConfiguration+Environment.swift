import DiaryCore
import DiaryHTTP
import Foundation

extension BillingConfiguration {
    /// REVENUECAT_WEBHOOK_AUTH (required in production), REVENUECAT_ACCEPT_SANDBOX (default 1
    /// outside production, 0 in it), PREMIUM_COUPLE_PRODUCT_IDS (comma-separated) and
    /// FREE_PLAN_DIARIES (default 1).
    static func fromEnvironment(production: Bool, _ environment: [String: String] = Setting.environment) throws -> BillingConfiguration {
        func value(_ name: String) -> String? { Setting.string(flag: nil, environment: name, in: environment) }
        let authorization = value("REVENUECAT_WEBHOOK_AUTH")
        if production && authorization == nil {
            throw ConfigurationError(description: "REVENUECAT_WEBHOOK_AUTH must be set in production: the Authorization header RevenueCat's webhook sends")
        }
        if let authorization, authorization.utf8.count < 16 {
            throw ConfigurationError(description: "REVENUECAT_WEBHOOK_AUTH is shorter than 16 characters: too easy to guess")
        }
        let sandbox: Bool
        switch value("REVENUECAT_ACCEPT_SANDBOX") {
        case nil: sandbox = !production
        case "1": sandbox = true
        case "0": sandbox = false
        case let other?: throw ConfigurationError(description: "REVENUECAT_ACCEPT_SANDBOX must be 0 or 1, not \(other)")
        }
        let products = (value("PREMIUM_COUPLE_PRODUCT_IDS") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let diaries = try Setting.integer(flag: nil, environment: "FREE_PLAN_DIARIES", default: defaultFreePlanDiaries, range: 0...1000)
        return BillingConfiguration(webhookAuthorization: authorization, acceptSandbox: sandbox, coupleProducts: Set(products), freePlanDiaries: diaries)
    }
}
