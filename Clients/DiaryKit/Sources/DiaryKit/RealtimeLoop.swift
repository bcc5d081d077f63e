import AsyncAlgorithms
import DiaryAPI
import Foundation

/// The realtime stream's connection loop: one socket at a time, reconnected until the
/// session ends or the iteration is cancelled.
actor RealtimeLoop {
    let client: DiaryClient
    let options: RealtimeOptions
    /// Where events go: each delivery waits until the app takes it, so nothing is buffered
    /// ahead of the app, and the socket is read no faster than the app reads.
    let events: AsyncThrowingChannel<RealtimeEvent, any Error>
    /// Where the next socket resumes: the last change delivered, or the last `ready` cursor.
    var cursor: String?
    /// Each diary's last change delivered, for catching it up after a `resync`.
    var diaryCursors: [String: String]
    var failures = 0

    init(client: DiaryClient, cursor: String?, diaryCursors: [String: String], options: RealtimeOptions,
         events: AsyncThrowingChannel<RealtimeEvent, any Error>) {
        self.client = client
        self.cursor = cursor
        self.diaryCursors = diaryCursors
        self.options = options
        self.events = events
    }

    func run() async {
        while !Task.isCancelled {
            do {
                let token = try await client.authority.accessToken()
                let socket = client.realtimeTransport.connect(to: client.realtimeURL(since: cursor), headers: ["Authorization": "Bearer \(token)"])
                let opened: Bool
                do {
                    opened = try await serve(socket, token: token)
                } catch {
                    // A failed catch-up ends this connection too: nobody would read it.
                    await socket.close()
                    throw error
                }
                let code = await socket.closeCode()
                await socket.close()
                if opened { failures = 0 }
                let reason = opened ? RealtimeCloseReason(closeCode: code) : .connectionLost
                // Reported at once: the app can show it while the checks below run.
                let delay = await announce(reason)
                do {
                    if opened, reason == .authenticationExpired {
                        // The token ran out, or the session ended: a refresh tells which (and
                        // throws sessionEnded for the latter, which ends the stream).
                        _ = try await client.authority.refreshedToken(replacing: token)
                    } else if !opened {
                        // The upgrade failed without saying why: a plain call refreshes an expired
                        // token, throws sessionEnded for an ended session, or fails while the
                        // server is unreachable.
                        _ = try await client.me()
                    }
                } catch let error where Self.endsTheStream(error) {
                    throw error
                } catch {
                    // Unreachable or refusing: the wait announced above stands, counted once.
                }
                try await client.realtimeWakeup.sleep(for: delay)
            } catch DiaryError.sessionEnded {
                events.fail(DiaryError.sessionEnded)
                return
            } catch DiaryError.notSignedIn {
                events.fail(DiaryError.notSignedIn)
                return
            } catch is CancellationError {
                break
            } catch {
                // The server is down or refused: wait, then try again.
                do { try await client.realtimeWakeup.sleep(for: await announce(.connectionLost)) } catch { break }
            }
        }
        events.finish()
    }

    /// What ends the stream (the session, or the task reading it), not one connection.
    private static func endsTheStream(_ error: any Error) -> Bool {
        switch error {
        case DiaryError.sessionEnded, DiaryError.notSignedIn, is CancellationError: true
        default: false
        }
    }

    /// Reports the close and returns how long to wait before the next connection.
    private func announce(_ reason: RealtimeCloseReason) async -> Duration {
        let delay = reason == .tooSlow ? .zero : options.backoff(afterFailures: failures)
        failures += 1
        await events.send(.disconnected(reason, retryIn: delay))
        return delay
    }

    /// Reads one socket until it closes; whether it opened (sent `ready`).
    private func serve(_ socket: RealtimeConnection, token: String) async throws -> Bool {
        var opened = false
        let renewal = Task { [client, options] in
            // Renew on the open socket a little before the token expires, again after each renewal.
            while !Task.isCancelled {
                guard let expiry = try await client.authority.current()?.accessTokenExpiresAt else { return }
                let wait = max(expiry.timeIntervalSinceNow - Double(options.renewalMargin.components.seconds), 1)
                try await Task.sleep(for: .seconds(wait))
                // A refresh, not accessToken(): its own margin is shorter than the renewal's, and
                // the same token again would renew nothing, once a second.
                guard let stale = try await client.authority.current()?.accessToken else { return }
                let fresh = try await client.authority.refreshedToken(replacing: stale)
                try await socket.send(#"{"type":"auth","accessToken":"\#(fresh)"}"#)
            }
        }
        defer { renewal.cancel() }
        do {
            for try await text in socket.messages {
                try await handle(text, opened: &opened)
            }
        } catch let error as DiaryError {
            throw error
        } catch {
            // A socket that broke, or an upgrade refused: the caller decides by `opened`.
        }
        return opened
    }

    private func handle(_ text: String, opened: inout Bool) async throws {
        let data = Data(text.utf8)
        let frame = try? JSONDecoder().decode(ControlFrame.self, from: data)
        switch frame?.type {
        case "ready":
            opened = true
            failures = 0
            // The cursor sent as `since`, or now when none was (or it was unknown: `resync` follows).
            if let ready = frame?.cursor {
                cursor = ready
                await events.send(.connected(cursor: ready))
            }
        case "resync":
            // The socket goes on from the position the frame carries: a reconnection resumes
            // there, not from the cursor the server no longer knows.
            if let next = frame?.cursor { cursor = next }
            try await resync()
        default:
            guard let event = try? JSONDecoder.diary.decode(Components.Schemas.ChangeEvent.self, from: data),
                  let change = DiaryChange(event) else { return }
            cursor = change.cursor
            diaryCursors[change.diaryID] = change.cursor
            await events.send(.change(change))
        }
    }

    /// The cursor given was too old or unknown: catch every diary up by delta sync from its
    /// own last cursor, or reload it when it has none or the server no longer has them.
    private func resync() async throws {
        for diary in try await client.diaries() {
            guard let known = diaryCursors[diary.id] else {
                let page = try await client.timeline(diaryID: diary.id)
                await events.send(.reloaded(try await client.diary(id: diary.id), page))
                diaryCursors[diary.id] = page.changesCursor ?? ""
                continue
            }
            for try await step in client.catchUp(diaryID: diary.id, from: known) {
                switch step {
                case .changes(let changes, let next):
                    for change in changes { await events.send(.change(change)) }
                    diaryCursors[diary.id] = next
                case .reloaded(let reloaded, let page, let next):
                    await events.send(.reloaded(reloaded, page))
                    diaryCursors[diary.id] = next
                }
            }
        }
    }

    /// The socket's own messages: `ready` and `resync`.
    private struct ControlFrame: Decodable {
        var type: String
        var cursor: String?
    }
}
