import DiaryModels
// The one `public import` of the layer: a conformance of DiaryModels' public types is as
// public as they are, and Swift refuses it unless the protocol's module is imported publicly.
public import Hummingbird

// The API types live in DiaryModels, which knows nothing of Hummingbird.
extension Session: ResponseEncodable {}
extension Me: ResponseEncodable {}
extension Diary: ResponseEncodable {}
extension DiaryList: ResponseEncodable {}
extension MemberList: ResponseEncodable {}
extension InviteCodeResponse: ResponseEncodable {}
extension InvitePreview: ResponseEncodable {}
extension Entry: ResponseEncodable {}
extension EntryPage: ResponseEncodable {}
extension ReadList: ResponseEncodable {}
extension TodayQuestion: ResponseEncodable {}
extension DeviceList: ResponseEncodable {}
extension ChangeList: ResponseEncodable {}
extension Photo: ResponseEncodable {}
extension ServiceStatus: ResponseEncodable {}
extension DataSafety: ResponseEncodable {}
extension DiaryCalendar: ResponseEncodable {}
