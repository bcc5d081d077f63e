// Importing DiaryKit imports the generated layer too: the app uses its types (and their members)
// without an `import DiaryAPI` of its own.
@_exported public import DiaryAPI

// The contract's types under the names the app uses. Each is generated from openapi.yaml
// (`Components.Schemas`), never written by hand, so the two cannot drift.

/// The signed-in user: profile, settings and plan.
public typealias Me = Components.Schemas.Me
/// The user's notification settings.
public typealias Settings = Components.Schemas.Settings
/// A diary as the caller sees it: members, invite code, unread count.
public typealias Diary = Components.Schemas.Diary
/// A diary's kind, as a request sends it (closed).
public typealias DiaryType = Components.Schemas.DiaryType
/// A member of a diary.
public typealias Member = Components.Schemas.Member
/// An entry as the caller sees it.
public typealias Entry = Components.Schemas.Entry
/// A page of a timeline, newest first.
public typealias EntryPage = Components.Schemas.EntryPage
/// Who read an entry, and when.
public typealias ReadReceipt = Components.Schemas.ReadReceipt
/// A stored photo, with its signed URL and when that URL expires.
public typealias Photo = Components.Schemas.Photo
/// One change in a diary, as the socket and delta sync carry it.
public typealias ChangeEvent = Components.Schemas.ChangeEvent
/// A page of delta sync.
public typealias ChangeList = Components.Schemas.ChangeList
/// A device registered for push notifications.
public typealias Device = Components.Schemas.Device
/// Which of Apple's push hosts a device token belongs to.
public typealias PushEnvironment = Components.Schemas.PushEnvironment
/// The service's state: maintenance, minimum app version, notices.
public typealias ServiceStatus = Components.Schemas.ServiceStatus
/// The question of the day.
public typealias TodayQuestion = Components.Schemas.TodayQuestion
/// What a push notification carries.
public typealias PushNotification = Components.Schemas.PushNotification
