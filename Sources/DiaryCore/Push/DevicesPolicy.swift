package import PostgresClient

/// Twins of the RLS policies on `devices`: a user sees and removes their own. Registering
/// goes through `register_device`, since a token may move from another account.
package enum DevicesPolicy {
    package static let select = PolicyTwin(
        "devices_select", on: "devices", using: "devices.user_id = (select app_user_id())")
    package static let delete = PolicyTwin(
        "devices_delete", on: "devices", using: "devices.user_id = (select app_user_id())")
}
