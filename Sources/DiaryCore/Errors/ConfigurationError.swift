/// Why a setting or a key file was refused; the message never echoes a password.
package struct ConfigurationError: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) {
        self.description = description
    }
}
