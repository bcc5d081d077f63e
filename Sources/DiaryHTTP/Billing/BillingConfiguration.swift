/// Premium: RevenueCat's webhook and the free plan's limits.
package struct BillingConfiguration: Sendable {
    /// `REVENUECAT_WEBHOOK_AUTH`: the Authorization header RevenueCat sends, exactly. nil
    /// turns the webhook off (404); production requires it.
    package var webhookAuthorization: String?
    /// `REVENUECAT_ACCEPT_SANDBOX`: apply SANDBOX events (default: outside production only).
    package var acceptSandbox: Bool
    /// `PREMIUM_COUPLE_PRODUCT_IDS`: products that make the purchaser's partner premium too.
    package var coupleProducts: Set<String>
    /// `FREE_PLAN_DIARIES`: diaries a free user may create.
    package var freePlanDiaries: Int

    package static let defaultFreePlanDiaries = 1

    package init(webhookAuthorization: String? = nil, acceptSandbox: Bool = true, coupleProducts: Set<String> = [], freePlanDiaries: Int = BillingConfiguration.defaultFreePlanDiaries) {
        self.webhookAuthorization = webhookAuthorization
        self.acceptSandbox = acceptSandbox
        self.coupleProducts = coupleProducts
        self.freePlanDiaries = freePlanDiaries
    }
}
