package session

import "github.com/monty-go/monty/runtime"

// LiveInterpreter returns s's live interpreter, for tests outside the
// package.
func LiveInterpreter(s *Session) *runtime.Interpreter { return s.it }
