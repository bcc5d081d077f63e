package import DiaryCore

/// What `GET /v1/service-status` reports and the door enforces.
package struct ServiceStatusConfiguration: Sendable {
    /// `MAINTENANCE_MODE=1`: writes get 503 `maintenance`; reads, exports, sign-in and webhooks go on.
    package var maintenance = false
    /// How long clients are told to wait during maintenance (`Retry-After`).
    package var maintenanceRetryAfterSeconds = 300
    /// `MINIMUM_APP_VERSION`: an `X-App-Version` below it gets 426 `upgrade_required`.
    package var minimumAppVersion: AppVersion?

    package init(maintenance: Bool = false, minimumAppVersion: AppVersion? = nil) {
        self.maintenance = maintenance
        self.minimumAppVersion = minimumAppVersion
    }
}
