import DiaryAPI
public import Foundation

/// Offline-first writing: posts, edits and deletions are kept in a store the moment they are
/// made, then sent in order, with backoff, whenever the app asks (at launch, when the network
/// returns, after writing). A post has a client-chosen id, so a send whose answer was lost, or
/// a queue that crashed between sending and forgetting, posts the entry once, never twice; an
/// edit sent twice sets the same fields twice; a deletion sent twice finds the entry gone.
///
/// Each send reports every write as `sent`, `rejected` (the server refused it for good: its
/// problem says why, and it is dropped) or `pending` (kept for the next send). The first
/// write that must wait holds back those after it, so an edit never overtakes the post it edits.
///
/// Writes belong to the user who queued them: a send makes only the signed-in user's, with
/// that user's token (a sign-in as someone else during the send stops it), and keeps the
/// others until their user signs in again. Drafts queued by DiaryKit 1 name no user: they are
/// never sent on their own; `unclaimed()` lists them, for the app to `claim` for the
/// signed-in user (after asking) or `discard`.
public actor EntryQueue {
    /// What became of one write in a send.
    public enum Outcome: Sendable {
        /// The server has it: for a post or an edit, the entry as it now is; nil for a deletion.
        case sent(QueuedWrite, Entry?)
        /// The server refused it for good (`validation_failed`, `forbidden`, `not_found`,
        /// `entry_id_conflict`, `premium_required`, …); it is no longer queued.
        case rejected(QueuedWrite, Problem)
        /// Not sent this time (offline, the server busy or in maintenance, an update or
        /// a sign-in needed, or held behind an earlier one); still queued.
        case pending(QueuedWrite, reason: String)
    }

    /// How hard one send tries before leaving a write pending.
    public struct RetryPolicy: Sendable {
        /// Tries per write in one send.
        public var attempts: Int
        /// The first wait between tries; it doubles.
        public var initialBackoff: Duration
        /// The longest wait.
        public var maximumBackoff: Duration

        /// Creates a policy; the defaults suit an app in the foreground.
        public init(attempts: Int = 3, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(8)) {
            self.attempts = attempts
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }
    }

    private let client: DiaryClient
    private let store: any EntryQueueStore
    private let policy: RetryPolicy
    private var sending: Task<[Outcome], any Error>?

    /// Creates a queue over `store`; writes a previous queue left there are sent by the next `send()`.
    public init(client: DiaryClient, store: any EntryQueueStore, retryPolicy: RetryPolicy = RetryPolicy()) {
        self.client = client
        self.store = store
        self.policy = retryPolicy
    }

    /// Keeps a post, written by the signed-in user, to send; durable once this returns. Show
    /// it in the timeline as pending. Its `photoFiles` now belong to the queue. Throws
    /// `notSignedIn` when nobody is.
    public func enqueue(_ draft: EntryDraft) async throws {
        try await append(.post(draft), id: draft.id)
    }

    /// Keeps an edit of an entry (the signed-in user's), sent after every write queued before it.
    public func enqueueEdit(diaryID: String, entryID: String, content: String? = nil, question: String? = nil,
                            photoIDs: [String]? = nil) async throws {
        try await append(.edit(diaryID: diaryID, entryID: entryID, content: content, question: question, photoIDs: photoIDs), id: UUID())
    }

    /// Keeps a deletion of an entry (the signed-in user's), sent after every write queued before it.
    public func enqueueDeletion(diaryID: String, entryID: String) async throws {
        try await append(.delete(diaryID: diaryID, entryID: entryID), id: UUID())
    }

    private func append(_ action: QueuedWrite.Action, id: UUID) async throws {
        guard let userID = await client.userID else { throw DiaryError.notSignedIn }
        try await store.append(QueuedWrite(id: id, action: action, userID: userID))
    }

    /// The signed-in user's writes not yet sent, oldest first; none when nobody is signed in.
    /// Throws when the store cannot be read.
    public func pending() async throws -> [QueuedWrite] {
        let writes = try await store.pendingWrites()
        guard let userID = await client.userID else { return [] }
        return writes.filter { $0.userID == userID }
    }

    /// Drafts queued by DiaryKit 1, which name no user: ask the user whether they wrote them,
    /// then `claim` or `discard` each. They are never sent otherwise.
    public func unclaimed() async throws -> [QueuedWrite] {
        try await store.pendingWrites().filter { $0.userID == nil }
    }

    /// Gives an unclaimed draft to the signed-in user; it is sent, in its place, from the next `send()`.
    public func claim(_ id: UUID) async throws {
        guard let userID = await client.userID else { throw DiaryError.notSignedIn }
        guard var write = try await store.pendingWrites().first(where: { $0.id == id && $0.userID == nil }) else { return }
        write.userID = userID
        try await store.update(write)
    }

    /// Forgets an unclaimed draft, or one of the signed-in user's writes, unsent.
    public func discard(_ id: UUID) async throws {
        let userID = await client.userID
        guard let write = try await store.pendingWrites().first(where: { $0.id == id && ($0.userID == nil || $0.userID == userID) })
        else { return }
        try await forget(write)
    }

    /// Sends the signed-in user's writes in order and reports each. A send already running is
    /// joined, not doubled. Cancelling the caller (an expiring background task) stops the send:
    /// a write not yet answered stays pending. Throws when the store cannot be read.
    @discardableResult
    public func send() async throws -> [Outcome] {
        if let sending { return try await Self.awaitCancellably(sending) }
        let task = Task { try await sendAll() }
        sending = task
        defer { sending = nil }
        return try await Self.awaitCancellably(task)
    }

    /// Waits for the send; the waiting caller's cancellation cancels it.
    private static func awaitCancellably(_ task: Task<[Outcome], any Error>) async throws -> [Outcome] {
        try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    private func sendAll() async throws -> [Outcome] {
        let stored = try await store.pendingWrites()
        guard let userID = await client.userID else {
            return stored.filter { $0.userID != nil }.map { .pending($0, reason: "not signed in") }
        }
        let writes = stored.filter { $0.userID == userID }
        var outcomes: [Outcome] = []
        for (index, write) in writes.enumerated() {
            let outcome = await sendOne(write)
            outcomes.append(outcome)
            if case .pending(_, let reason) = outcome {
                outcomes += writes[(index + 1)...].map { .pending($0, reason: "held behind an earlier write: \(reason)") }
                break
            }
        }
        return outcomes
    }

    private func sendOne(_ queued: QueuedWrite) async -> Outcome {
        var write = queued
        var attempt = 0
        while true {
            attempt += 1
            if Task.isCancelled { return .pending(write, reason: "cancelled") }
            guard let userID = write.userID else { return .pending(write, reason: "unclaimed") }
            do {
                let (done, entry) = try await client.acting(as: userID) { [write] in try await self.perform(write) }
                do {
                    try await forget(done)
                } catch {
                    // Sent, but still stored: the next send makes it again, to the same effect.
                    return .pending(done, reason: "sent, but the store could not forget it: \(error)")
                }
                return .sent(done, entry)
            } catch DiaryError.problem(let problem) where problem.code.refusesTheDraft {
                try? await forget(write)
                return .rejected(write, problem)
            } catch DiaryError.problem(let problem) where !problem.isTransient {
                // Not a verdict on the write (an update needed, a sign-in, a proxy's answer, a code
                // added later): it is kept, and it holds back the writes after it.
                return .pending(write, reason: problem.code.rawValue.isEmpty ? "HTTP \(problem.status)" : problem.code.rawValue)
            } catch DiaryError.notSignedIn {
                return .pending(write, reason: "not signed in")
            } catch DiaryError.sessionEnded {
                return .pending(write, reason: "the session ended")
            } catch DiaryError.sessionChanged {
                return .pending(write, reason: "another user signed in")
            } catch {
                // Photos uploaded before the failure are in the store: the next try skips them.
                write = (try? await store.pendingWrites().first { $0.id == write.id }) ?? write
                guard attempt < policy.attempts else { return .pending(write, reason: "\(error)") }
                let delay = min(policy.initialBackoff * Int(pow(2.0, Double(attempt - 1))), policy.maximumBackoff)
                let serverDelay: Duration? = if case DiaryError.problem(let problem) = error { problem.retryAfter } else { nil }
                do {
                    try await Task.sleep(for: max(delay, min(serverDelay ?? .zero, policy.maximumBackoff)))
                } catch {
                    return .pending(write, reason: "cancelled")
                }
            }
        }
    }

    /// Makes one write on the server; a post first uploads its photo files, keeping each
    /// photo's id in the store as soon as it has one.
    private func perform(_ queued: QueuedWrite) async throws -> (QueuedWrite, Entry?) {
        var write = queued
        switch write.action {
        case .post(var draft):
            for index in draft.photoFiles.indices where draft.photoFiles[index].photoID == nil {
                let file = draft.photoFiles[index]
                draft.photoFiles[index].photoID = try await client.uploadPhoto(fileURL: file.fileURL, format: file.format).id
                write.action = .post(draft)
                try await store.update(write)
            }
            var posted = draft
            posted.photoIDs += draft.photoFiles.compactMap(\.photoID)
            return (write, try await client.post(posted))
        case .edit(let diaryID, let entryID, let content, let question, let photoIDs):
            return (write, try await client.editEntry(diaryID: diaryID, entryID: entryID, content: content, question: question,
                                                      photoIDs: photoIDs))
        case .delete(let diaryID, let entryID):
            do {
                try await client.deleteEntry(diaryID: diaryID, entryID: entryID)
            } catch DiaryError.problem(let problem) where problem.code == .notFound {
                // Sent again after a lost answer, or the entry was already gone: either way, done.
            }
            return (write, nil)
        }
    }

    /// Drops a write from the store, and the photo files it owned.
    private func forget(_ write: QueuedWrite) async throws {
        try await store.remove(id: write.id)
        for file in write.draft?.photoFiles ?? [] { try? FileManager.default.removeItem(at: file.fileURL) }
    }
}
