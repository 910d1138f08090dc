import Glibc
import SyncStoreCore
import SyncStoreSync

/// Where a running store inspector (`syncstore-cli inspect`) says it is, so the plugins'
/// showInspector can point at it: `<root>/inspector.json`, {"url", "pid"}, readable by its owner
/// only (the URL carries the inspector's token), removed when the inspector stops.
package enum InspectorRecord {
    package static func path(root: String) -> String { "\(root)/inspector.json" }

    /// Records a running inspector (replacing an older record); best effort.
    package static func write(root: String, url: String, pid: Int32) {
        let doc = JSONDocument.object()
        doc.root.set("url", owned: JSONMake.string(url))
        doc.root.set("pid", owned: JSONMake.int(Int64(pid)))
        let text = Array(doc.root.dump().utf8)
        let target = path(root: root)
        let temporary = "\(target).\(pid).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let written = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        Glibc.close(fd)
        if written == text.count { _ = rename(temporary, target) } else { _ = unlink(temporary) }
    }

    /// Removes the record of the inspector `pid` (not a newer one's).
    package static func remove(root: String, pid: Int32) {
        if running(root: root)?.pid == pid { _ = unlink(path(root: root)) }
    }

    /// The URL and pid of the inspector running for `root`, if its process is alive.
    package static func running(root: String) -> (url: String, pid: Int32)? {
        guard let text = try? FileSystem.readFile(path(root: root)),
              let doc = try? JSONDocument.parse(text, what: "inspector record"),
              let url = doc.root["url"]?.string, let pid = doc.root["pid"]?.int64,
              pid > 0, pid <= Int64(Int32.max) else { return nil }
        // A record left by a killed inspector names a process that is gone.
        guard kill(Int32(pid), 0) == 0 || errno == EPERM else { return nil }
        return (url, Int32(pid))
    }
}
