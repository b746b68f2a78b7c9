package lsp

import (
	"encoding/json"

	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"
)

// The LSP types come from glsp's protocol_3_16. What LSP 3.16 lacks is
// declared here: position encodings (3.17), inline completion (3.18),
// the error codes 3.17 added, and a cancel parameter whose id decodes
// (glsp's IntegerOrString.UnmarshalJSON has a value receiver and keeps
// nothing).

// Methods this server handles.
const (
	methodInitialize          = "initialize"
	methodInitialized         = "initialized"
	methodShutdown            = "shutdown"
	methodExit                = "exit"
	methodCancelRequest       = "$/cancelRequest"
	methodDidOpen             = "textDocument/didOpen"
	methodDidChange           = "textDocument/didChange"
	methodDidSave             = "textDocument/didSave"
	methodDidClose            = "textDocument/didClose"
	methodCompletion          = "textDocument/completion"
	methodInlineCompletion    = "textDocument/inlineCompletion"
	methodDidChangeWatched    = "workspace/didChangeWatchedFiles"
	methodDidChangeFolders    = "workspace/didChangeWorkspaceFolders"
	methodDidChangeConfig     = "workspace/didChangeConfiguration"
	methodConfiguration       = "workspace/configuration"
	methodRegisterCapability  = "client/registerCapability"
	methodShowMessage         = "window/showMessage"
	methodSetTrace            = "$/setTrace"
	methodDidChangeWatchedReg = "infill-watch"
)

// JSON-RPC and LSP error codes beyond jsonrpc2's.
const (
	codeServerNotInitialized int64 = -32002
	codeRequestFailed        int64 = -32803 // LSP 3.17
	codeRequestCancelled     int64 = -32800
)

// Position encodings (LSP 3.17 PositionEncodingKind).
const (
	encodingUTF8  = "utf-8"
	encodingUTF16 = "utf-16"
	encodingUTF32 = "utf-32"
)

// cancelParams is $/cancelRequest's parameter.
type cancelParams struct {
	ID jsonrpc2.ID `json:"id"`
}

// initializeParams is glsp's InitializeParams with the client
// capabilities this server reads, including 3.17's.
type initializeParams struct {
	protocol.InitializeParams
	Capabilities clientCapabilities `json:"capabilities"`
}

type clientCapabilities struct {
	General *struct {
		// PositionEncodings lists the encodings the client offers, the
		// preferred first (3.17).
		PositionEncodings []string `json:"positionEncodings"`
	} `json:"general"`
	// OffsetEncoding is clangd's extension that came before 3.17; Neovim
	// before 0.10 sends it when configured to.
	OffsetEncoding []string `json:"offsetEncoding"`
	Workspace      *struct {
		Configuration         bool `json:"configuration"`
		WorkspaceFolders      bool `json:"workspaceFolders"`
		DidChangeWatchedFiles *struct {
			DynamicRegistration bool `json:"dynamicRegistration"`
		} `json:"didChangeWatchedFiles"`
	} `json:"workspace"`
}

// serverCapabilities adds 3.17's positionEncoding and 3.18's
// inlineCompletionProvider to glsp's.
type serverCapabilities struct {
	protocol.ServerCapabilities
	PositionEncoding         string `json:"positionEncoding"`
	InlineCompletionProvider bool   `json:"inlineCompletionProvider"`
}

type initializeResult struct {
	Capabilities serverCapabilities                   `json:"capabilities"`
	ServerInfo   *protocol.InitializeResultServerInfo `json:"serverInfo,omitempty"`
	// OffsetEncoding answers clangd's extension, for clients that sent it.
	OffsetEncoding string `json:"offsetEncoding,omitempty"`
}

// inlineCompletionParams is textDocument/inlineCompletion's parameter
// (3.18); the context (trigger kind, selected completion) is not used.
type inlineCompletionParams struct {
	protocol.TextDocumentPositionParams
	Context json.RawMessage `json:"context,omitempty"`
}

// inlineCompletionList is its result.
type inlineCompletionList struct {
	Items []inlineCompletionItem `json:"items"`
}

type inlineCompletionItem struct {
	InsertText string          `json:"insertText"`
	FilterText string          `json:"filterText,omitempty"`
	Range      *protocol.Range `json:"range,omitempty"`
}

// configurationParams is workspace/configuration's parameter.
type configurationParams struct {
	Items []configurationItem `json:"items"`
}

type configurationItem struct {
	Section string `json:"section,omitempty"`
}

// watchersOptions registers file watchers (3.16's
// DidChangeWatchedFilesRegistrationOptions with a string glob).
type watchersOptions struct {
	Watchers []protocol.FileSystemWatcher `json:"watchers"`
}
