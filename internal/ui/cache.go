package ui

import (
	"container/list"
	"sync"
)

// answerCache keeps encoded answers (filtered and sorted trials tables)
// of one state version, least recently used first out, within a number
// of entries and of bytes: distinct queries cannot grow the dashboard
// without bound. Concurrent askers of one key compute it once.
type answerCache struct {
	maxEntries int
	maxBytes   int

	mu    sync.Mutex
	bytes int
	lru   *list.List // of *answer, most recent at the front
	byKey map[string]*list.Element
}

type answer struct {
	key  string
	once sync.Once
	v    any
	size int
}

func newAnswerCache(maxEntries, maxBytes int) *answerCache {
	return &answerCache{maxEntries: maxEntries, maxBytes: maxBytes, lru: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the value under key, computing it with f (whose result
// weighs size(v) bytes) when it is not kept.
func (c *answerCache) get(key string, f func() any, size func(any) int) any {
	c.mu.Lock()
	el := c.byKey[key]
	if el == nil {
		el = c.lru.PushFront(&answer{key: key})
		c.byKey[key] = el
	} else {
		c.lru.MoveToFront(el)
	}
	a := el.Value.(*answer)
	c.mu.Unlock()
	a.once.Do(func() {
		a.v = f()
		n := size(a.v)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.byKey[key] != el { // evicted while computing: keep it out
			return
		}
		a.size = n
		c.bytes += n
		c.evict(el)
	})
	return a.v
}

// evict drops the least recently used answers, never keep, until the
// cache is within its bounds; c.mu is held.
func (c *answerCache) evict(keep *list.Element) {
	for c.lru.Len() > 1 && (c.lru.Len() > c.maxEntries || c.bytes > c.maxBytes) {
		el := c.lru.Back()
		if el == keep {
			el = el.Prev()
		}
		a := el.Value.(*answer)
		c.lru.Remove(el)
		delete(c.byKey, a.key)
		c.bytes -= a.size
	}
	if c.bytes > c.maxBytes && c.lru.Len() == 1 { // one answer larger than all: not kept
		a := keep.Value.(*answer)
		c.lru.Remove(keep)
		delete(c.byKey, a.key)
		c.bytes -= a.size
	}
}

// size returns the bytes and entries kept.
func (c *answerCache) size() (bytes, entries int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes, c.lru.Len()
}
