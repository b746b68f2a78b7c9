// Package infill is the Go client library for the infill completion server
// (infill.v1.CompletionService). It owns the client side of the API: dialing
// with sensible defaults, safe retries, streaming, repository deltas and
// content digests, and building requests from a directory on disk. Editor plugins
// and the infill command-line tool are built on it.
//
// # Connecting
//
// Dial opens a lazily connected client; Config's zero values mean defaults:
//
//	c, err := infill.Dial("localhost:50051", infill.Config{}, logger)
//	defer c.Close()
//
// The defaults are plaintext transport (set Config.TLS for TLS), keepalive
// pings every minute while a call is open, 64 MiB send and receive limits
// (the server's default receive limit), and up to 4 attempts per call.
// Config.Token is sent as "authorization: Bearer TOKEN" on every call; it
// requires TLS unless Config.AllowTokenWithoutTLS is set (for loopback).
//
// # Retries
//
// Only UNAVAILABLE is retried, and only while nothing has been handed to the
// caller: for Complete any UNAVAILABLE, for Stream an UNAVAILABLE that
// arrives before the first TextDelta. Attempts are spaced by exponential
// backoff with jitter (Config.Retry). Every other code, and any failure
// after text was yielded, is returned as it is.
//
// # Streaming
//
// Stream returns an iterator over the stream's events. It yields exactly
// one successful attempt's events (StreamStart, TextDelta..., the final
// CompleteResponse as Done) or ends with one error; the StreamStart of an
// attempt is held back until its first TextDelta or Done, so a retried
// attempt never shows twice. Breaking out of the loop, or cancelling ctx,
// cancels the call at the server.
//
//	for ev, err := range c.Stream(ctx, req) {
//		if err != nil {
//			return err
//		}
//		if d := ev.GetDelta(); d != nil {
//			fmt.Print(d.GetText())
//		}
//	}
//
// # Repository deltas and content digests
//
// By default (Config.Transfer = TransferDeltas) a client sends as little
// of a repository as the server needs, as an editor plugin should: once a
// response has named a repository's file list (repository_snapshot), the
// next request for that repository name carries only the files that
// changed since, on that base; and a file whose content this client
// already sent in an accepted call goes as "sha256:<hex>" (see Digest).
// The cursor file, once the server holds an earlier text of it from this
// client, goes as one edit to that text (File.edits), so a keystroke
// costs a few bytes, not the file. To find what changed, the client
// hashes only content it has not seen under that path before: passing the
// whole repository on every call, as the same strings or as equal copies,
// costs a comparison per file, not a hash (up to 64 MiB of content held).
// When the server no longer holds a base (FAILED_PRECONDITION with a
// google.rpc.PreconditionFailure violation of type "SNAPSHOT"; see
// UnknownSnapshot) the client sends the whole list; when it lacks content
// (violations of type "MISSING_CONTENT", the file's path as subject; see
// MissingContent) it resends those files with content. Both are
// transparent to the caller. TransferDigests sends the whole list every
// time; TransferWhole sends requests as they are.
//
// # Requests from a directory
//
// LoadRepository reads a repository directory (skipping .git, node_modules,
// vendor and other tool directories, binary and non-UTF-8 files, and files
// over a size cap); ParsePosition and Position.Cursor turn a 1-based
// "LINE:COL" into the API's 0-based cursor; RequestFromDir does all of it.
package infill
