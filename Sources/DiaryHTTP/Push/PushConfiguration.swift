package import APNSClient
package import DiaryCore
import Foundation

/// Push settings: APNs, when configured, and the outbox's and reminders' timing.
package struct PushConfiguration: Sendable {
    /// nil: nothing is sent; the outbox fills and waits.
    package var apns: APNSConfiguration?
    /// Why push is off, when `apns` is nil; said once at start.
    package var offReason = "APNs is not configured"
    package var delivery = PushDelivery.Options()
    package var reminders = ReminderScheduler.Options()
    /// false leaves reminders to another clock (the tests tick one of their own).
    package var runsReminders = true

    package init(apns: APNSConfiguration? = nil) {
        self.apns = apns
    }
}

