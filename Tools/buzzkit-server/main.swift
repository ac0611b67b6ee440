import APNsSenderApp
import AdminCommand
import Foundation
import GatewayApp
import IngestApp
import LiveActivityApp
import WebhooksApp
import WorkflowApp

// buzzkit-server: every service and buzzkit-admin in one executable, run as the command it is
// called by. The container image ships it once with a link per command (`gateway`, `ingest`,
// `workflow`, `apns-sender`, `liveactivity`, `webhooks`, `buzzkit-admin`), so the statically linked Swift
// runtime, Foundation and ICU's data (about 60 MB an executable) are in the image once instead of
// once per service. `buzzkit-server COMMAND ARGS...` runs a command by its name as well.
// A new service: its `<Service>Main.run` in `commands` below.
let commands: [String: @Sendable ([String]) async -> Never] = [
    "gateway": { _ in await GatewayMain.run() },
    "ingest": { _ in await IngestMain.run() },
    "workflow": { _ in await WorkflowMain.run() },
    "apns-sender": { _ in await APNsSenderMain.run() },
    "liveactivity": { _ in await LiveActivityMain.run() },
    "webhooks": { _ in await WebhooksMain.run() },
    "buzzkit-admin": { arguments in await AdminCommand.run(arguments: Array(arguments.dropFirst())) }
]

// argv as the command sees it: its own name first.
var arguments = CommandLine.arguments
arguments[0] = URL(fileURLWithPath: arguments[0]).lastPathComponent
if commands[arguments[0]] == nil { arguments.removeFirst() }
guard let name = arguments.first, let command = commands[name] else {
    let names = commands.keys.sorted().joined(separator: " | ")
    FileHandle.standardError.write(Data("usage: buzzkit-server \(names) [arguments]\n".utf8))
    exit(2)
}
await command(arguments)
