package store_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/monty-go/monty/session/store"
)

func TestCheckID(t *testing.T) {
	for _, id := range []string{"a", "s-1", "team/alice:session.2", "a..b", ".hidden/x", "x/..y", strings.Repeat("z", 200)} {
		assert.NoError(t, store.CheckID(id), id)
	}
	for _, id := range []string{"", strings.Repeat("z", 201), ".", "..", "a/..", "../a", "a/./b", "a/.", "a b", "é", "a\x00", "a\\b", "a?b"} {
		assert.ErrorIs(t, store.CheckID(id), store.ErrInvalidID, "%q", id)
	}
}
