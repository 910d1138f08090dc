// A minimal HTTP/1.1 server on 127.0.0.1 for the REST answers target: every request gets the
// next answer of the current input (status and body), whatever its method and path, so the
// engine's parsing of collections, composite, describe, token and error answers is what runs.
import Glibc

final class FakeServer: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var answers: [(status: Int, body: [UInt8])] = []
    private var next = 0
    private(set) var port: UInt16 = 0
    private var listener: Int32 = -1

    init() {
        pthread_mutex_init(&mutex, nil)
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { fuzzFail("fake server: bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: addr.sin_port)
        FakeServer.spawn { [self] in acceptLoop() }
    }

    /// The answers the next requests get, in order; once they run out, 404.
    func load(_ list: [(Int, [UInt8])]) {
        pthread_mutex_lock(&mutex)
        answers = list.map { (status: $0.0, body: $0.1) }
        next = 0
        pthread_mutex_unlock(&mutex)
    }

    private func take() -> (Int, [UInt8]) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        guard next < answers.count else { return (404, Array(#"[{"errorCode":"NOT_FOUND","message":"no more answers"}]"#.utf8)) }
        next += 1
        return answers[next - 1]
    }

    private static func spawn(_ body: @escaping () -> Void) {
        final class Box { let body: () -> Void; init(_ b: @escaping () -> Void) { body = b } }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        guard rc == 0 else { fuzzFail("fake server: pthread_create failed") }
        pthread_detach(thread)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { continue }
            FakeServer.spawn { [self] in serve(fd) }
        }
    }

    /// Requests on one kept-alive connection until the client closes it.
    private func serve(_ fd: Int32) {
        defer { close(fd) }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        func fill() -> Bool {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return false }
            buffer.append(contentsOf: chunk[..<n])
            return true
        }
        let separator: [UInt8] = [13, 10, 13, 10]
        while true {
            var headerEnd: Int? = nil
            while headerEnd == nil {
                if buffer.count >= 4 {
                    for i in 0...(buffer.count - 4) where buffer[i..<(i + 4)].elementsEqual(separator) { headerEnd = i; break }
                }
                if headerEnd == nil && !fill() { return }
            }
            let head = String(decoding: buffer[..<headerEnd!], as: UTF8.self).lowercased()
            buffer.removeFirst(headerEnd! + 4)
            var length = 0
            for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
                length = Int(line.dropFirst("content-length:".count).trimmingSpaces) ?? 0
            }
            if head.contains("expect: 100-continue") { send(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) }
            while buffer.count < length { if !fill() { return } }
            buffer.removeFirst(length)
            let (status, body) = take()
            var response = Array("HTTP/1.1 \(status) Fuzz\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
            response.append(contentsOf: body)
            send(fd, response)
        }
    }

    private func send(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
