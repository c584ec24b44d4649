package session

import "github.com/monty-go/monty/runtime"

// Interpreter returns the session's live interpreter.
func (s *Session) Interpreter() *runtime.Interpreter { return s.it }
