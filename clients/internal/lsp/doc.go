// Package lsp is `infill lsp`: a language server that gives any LSP
// editor infill's completions, as a gRPC client of an infill server. It
// owns the editor side: the LSP session (lifecycle, capabilities,
// position encodings), the editor's documents and the workspace's
// repositories, and turning completion requests into CompleteRequests
// and their candidates into LSP items.
//
// What reaches the infill server: the repository of the cursor's
// document (the workspace folder, or the nearest directory above it
// holding .git), read with the command-line tool's leave-out rules
// (infill.LoadRepository, infill.LoadFile) and overlaid with the text of
// every open document (one whose file those rules leave out goes only
// with its own completions, as `infill complete` sends such a file only
// as the cursor's). It goes through the Go client library
// (clients/go/infill), so after the first request a keystroke costs its
// own bytes: the file list travels as a delta on the server's snapshot,
// unchanged files as nothing, files the server holds as digests, and the
// cursor's document as one edit to the text the server holds. The
// editor's didChange ranges are applied exactly to this server's copy of
// each document (UTF-8, UTF-16 or UTF-32 columns, lines ending in "\n",
// "\r\n" or "\r"); the cursor goes to the server as a byte offset in that
// text.
//
// Methods: initialize (advertising incremental sync, completion,
// 3.18's inline completion and the negotiated position encoding:
// general.positionEncodings, or clangd's offsetEncoding extension; UTF-16
// when the client offers neither), initialized (file-watcher
// registration and workspace/configuration where the client supports
// them), shutdown, exit, $/cancelRequest, textDocument/didOpen, didChange
// (full and incremental), didSave, didClose, textDocument/completion (one
// item per candidate, a plain-text textEdit from the start of the word
// at the cursor), textDocument/inlineCompletion (items with insertText
// and range; with Settings.EditPrediction, the server's predicted edit
// when it is at the cursor), infill/predictEdit (the predicted edit
// anywhere, as a TextEdit: predict.go, with the session's edit history
// of history.go), workspace/didChangeWatchedFiles,
// didChangeWorkspaceFolders and didChangeConfiguration (Settings). Other
// requests are MethodNotFound; other notifications are ignored.
//
// Latency: every completion runs in its own goroutine while the
// connection reads on, so $/cancelRequest cancels its gRPC call (and so
// the generation at the backend), and a newer completion request for the
// same document cancels the older one at once (the older gets an empty
// answer). Each document is its own session_id, so the server's own
// per-session latest-wins and typed-through reuse apply per buffer. Settings.DebounceMs (default 0: editors debounce) waits before
// the call, for free cancellation by the next request.
//
// Settings: the flags, then initializationOptions, then the editor's
// workspace settings (pushed, or pulled with workspace/configuration at
// most once after initialized and once per didChangeConfiguration without
// settings; an answer never pulls again), each layer over the one before
// (settings.go). A completion asked while a pull is out waits for its
// answer, at most settingsWait (1 s) from the pull.
//
// Editors: the configurations docs/editors.md shows and `infill lsp
// --help` prints are editors/*, embedded (EditorConfigs); the end-to-end
// tests run the Neovim 0.7 and Vim (YouCompleteMe, yegappan/lsp) ones in those
// editors.
//
// Errors: a message that is not JSON or not JSON-RPC gets a JSON-RPC
// error and the session goes on (frameStream); bad params, a position
// past the end of a document and a document never opened are
// InvalidParams; an infill server that cannot be reached gives empty
// answers and one window/showMessage until a completion succeeds again;
// other server errors fail the request (RequestFailed) and are shown once
// per kind.
//
// The protocol types are glsp's protocol_3_16, with the few 3.17 and
// 3.18 additions declared in protocol.go. The connection is
// sourcegraph/jsonrpc2 (the JSON-RPC layer glsp itself uses), driven by
// this package's handler rather than glsp's server, which answers
// requests one at a time in its read loop (a cancel could not reach a
// completion in flight), gives handlers no request context or id, and
// serves only stdio, TCP, WebSocket or Node IPC (no stream of one's own,
// as an in-memory test pipe).
package lsp
