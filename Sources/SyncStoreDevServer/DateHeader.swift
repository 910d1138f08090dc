import Hummingbird
import NIOCore
import NIOHTTPTypes

/// Puts the server clock (`--clock-offset`) into the `Date` response header. Hummingbird sets
/// `Date` itself from the real clock after the responder returns, so the header is rewritten
/// here, on its way out, replacing Hummingbird's (one `Date` header, never two). With no offset
/// the header is left as Hummingbird wrote it. Sits after the HTTP/1 codec, so it sees
/// HTTPTypes parts.
final class DateHeaderHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if ClockOffset.shared.millis != 0, case .head(var head) = unwrapOutboundIn(data), head.headerFields[.date] != nil {
            head.headerFields[.date] = SFTime.httpDate(millis: SFTime.serverNowMillis())
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        }
        context.write(data, promise: promise)
    }
}
