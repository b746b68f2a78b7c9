(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode)
                 . ("infill" "lsp" "--server" "127.0.0.1:50051"
                    :initializationOptions (:maxTokens 64)))))
