package import Foundation

/// README.txt of both exports: what each file of the archive is, in Japanese and then in
/// English, as plain text, so the archive explains itself to someone without the app.
package enum ExportReadme {
    /// README.txt of a diary's export (`GET /v1/diaries/{id}/export`).
    package static func diary(name: String, exportedAt: Date) -> String {
        let stamp = timestamp(exportedAt)
        return """
            交換日記「\(name)」の書き出し
            書き出した日時: \(stamp)

            ■ 日本語

            このフォルダには、この交換日記のすべてが入っています。アプリがなくても読めるよう、
            どのファイルも広く使われている形式です（文章は UTF-8 のプレーンな JSON、
            写真は JPEG・PNG・WebP のいずれか）。

            index.html
              交換日記を一冊の本のように見られるページです。お使いのブラウザで開いてください。
              インターネットにつながっていなくても表示でき、そのまま印刷もできます。
              日付ごとに、書いた人、時刻、今日の質問、本文、写真、既読が並びます。
            diary.json
              交換日記の情報: 名前、種類、メンバー、書き出した日時、日付に使ったタイムゾーン、日記の件数。
            entries.json
              すべての日記を古い順に並べた一覧です。1件ごとの項目:
                id          日記の識別子
                author      書いた人（id、表示名）
                content     本文
                question    今日の質問（ない場合は null）
                photos      写真のファイル名（photos/ の中）
                readBy      既読（読んだ人の id と読んだ日時）
                createdAt   書いた日時（UTC、ISO 8601）
                updatedAt   最後に編集した日時（UTC、ISO 8601）
                localDate   書いた日付（YYYY-MM-DD、diary.json のタイムゾーン）
            photos/
              日記に添えられた写真と、メンバーのプロフィール写真です（diary.json と
              entries.json の profileImageUrl がそのファイル名）。ファイル名は <写真の id>.<拡張子> です。
            README.txt
              このファイルです。

            匿名の交換日記では、書いた人と読んだ人はアプリと同じく匿名の名前で表示されます。

            ■ English

            This folder holds the whole diary. Every file is in a widely used format, so it
            stays readable without the app: the text is plain JSON in UTF-8, and the photos
            are JPEG, PNG or WebP.

            index.html
              The diary as a book. Open it in any browser; it needs no internet connection
              and prints as it is. Entries are grouped by date and show the author, the time,
              the question of the day, the text, the photos and who has read them (既読).
            diary.json
              The diary: its name, type and members, when it was exported, the time zone the
              dates use, and how many entries it has.
            entries.json
              Every entry, oldest first. The fields of each:
                id          the entry's identifier
                author      who wrote it (id, display name)
                content     the text
                question    the question of the day, or null
                photos      its photos' paths inside photos/
                readBy      read receipts: who read it (user id) and when
                createdAt   when it was written (UTC, ISO 8601)
                updatedAt   when it was last edited (UTC, ISO 8601)
                localDate   the date it was written (YYYY-MM-DD, in diary.json's time zone)
            photos/
              The entries' photos and the members' profile photos (diary.json's and
              entries.json's profileImageUrl name them), named <photo id>.<extension>.
            README.txt
              This file.

            In an anonymous diary, authors and readers appear under their aliases, as in the app.

            """
    }

    /// README.txt of a member's personal export (`GET /v1/me/export`).
    package static func personal(exportedAt: Date) -> String {
        let stamp = timestamp(exportedAt)
        return """
            あなたのデータの書き出し / Your data export
            書き出した日時 / Exported at: \(stamp)

            ■ 日本語

            このフォルダには、個人情報保護法にもとづく開示請求に応えて、このサービスが
            保存しているあなたのデータが入っています。アプリがなくても読めるよう、文章は
            UTF-8 のプレーンな JSON、写真は JPEG・PNG・WebP のいずれかです。日時は UTC
            （ISO 8601）です。

            profile.json
              プロフィール（表示名など）、設定、登録されている端末。
            memberships.json
              参加している交換日記と、それぞれでの役割、参加した日時。
            departures.json
              退出した交換日記のうち、まだあなたの日記を書き出せるもの: 名前、退出した
              日時、閉じられた日時（最後のメンバーが退出したとき）、保管される期限。
            entries.json
              あなたが書いたすべての日記（どの交換日記のものも、保管期限内なら退出した
              交換日記のものも）。本文、今日の質問、写真のファイル名（photos/ の中）、
              書いた日時と編集した日時。
            reads.json
              あなたの既読: どの日記をいつ読んだか。
            billing.json
              プレミアムの購入・更新・解約などの記録。
            photos/
              あなたが日記に添えた写真と、あなたのプロフィール写真（profile.json の
              profileImageUrl がそのファイル名）です。ファイル名は <写真の id>.<拡張子> です。
            README.txt
              このファイルです。

            ■ English

            This folder holds the data this service keeps about you, as disclosed under
            Japan's Act on the Protection of Personal Information (APPI). Every file stays
            readable without the app: the text is plain JSON in UTF-8, and the photos are
            JPEG, PNG or WebP. Times are in UTC (ISO 8601).

            profile.json
              Your profile (display name and so on), your settings and your registered devices.
            memberships.json
              The diaries you belong to, your role in each and when you joined.
            departures.json
              The diaries you left whose entries are still yours to export: the name, when
              you left, when the diary closed (its last member left), and until when it is kept.
            entries.json
              Every entry you wrote, in any diary (and in a diary you left, until it is no
              longer kept): the text, the question of the day, its photos' paths inside
              photos/, and when it was written and last edited.
            reads.json
              Your read receipts (既読): which entries you read, and when.
            billing.json
              Your premium events: purchases, renewals, cancellations and the like.
            photos/
              The photos you attached to your entries, and your profile photo (profile.json's
              profileImageUrl names it), named <photo id>.<extension>.
            README.txt
              This file.

            """
    }

    /// 2026-11-05T09:30:00Z: the same instant the JSON files write, unambiguous in any zone.
    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
