package import PostgresClient

extension PostgresConfiguration {
    /// The server's connection to a Citus coordinator (`DB_CITUS=1`): every transaction
    /// uses one connection a node. A request writes `users`, a reference table that tables
    /// sharded by diary point at, after reading shards; Citus refuses that write once a
    /// read has used several connections to a node ("there was a parallel operation").
    package func onCitusCoordinator() -> PostgresConfiguration {
        var configuration = self
        let sequential = "-c citus.multi_shard_modify_mode=sequential"
        configuration.parameters["options"] = [configuration.parameters["options"], sequential].compactMap { $0 }.joined(separator: " ")
        return configuration
    }
}
