//! A bounded table of per-connection state: at most `cap` entries, an entry idle for
//! longer than `idle_ns` (capture time) expires, and when the table is full the least
//! recently used entry is evicted. Slots are reused, so once the table has grown to its
//! working size, inserting and removing allocate nothing.
//!
//! A key carries its own hash ([`TableKey`]): a packet's connection key is hashed once, and
//! every table the packet touches (and the stream keys made from it) reuses that hash.

use hashbrown::HashTable;

const NIL: u32 = u32::MAX;

/// A key that knows its hash: equal keys give equal hashes.
pub trait TableKey: Eq + Copy {
    /// The key's hash.
    fn table_hash(&self) -> u64;
}

struct Slot<K, V> {
    key: K,
    last_ns: i64,
    prev: u32,
    next: u32,
    value: V,
}

/// How many entries left a table, and why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableCounts {
    /// Entries evicted because the table was full.
    pub evicted: u64,
    /// Entries that expired after their idle limit.
    pub expired: u64,
    /// Entries held now.
    pub len: u64,
}

/// A bounded LRU map with idle expiry.
pub struct Table<K, V> {
    /// Slot indices, found by the key's hash and compared with the slot's key.
    map: HashTable<u32>,
    slots: Vec<Slot<K, V>>,
    free: Vec<u32>,
    head: u32, // most recent
    tail: u32, // least recent
    cap: usize,
    idle_ns: i64,
    counts: TableCounts,
}

impl<K: TableKey, V> Table<K, V> {
    /// An empty table of at most `cap` entries (0 keeps nothing) expiring after `idle_ns`.
    pub fn new(cap: usize, idle_ns: i64) -> Self {
        Table {
            map: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            cap: cap.min(NIL as usize - 1),
            idle_ns,
            counts: TableCounts::default(),
        }
    }

    /// Whether the table holds no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// The counters.
    pub fn counts(&self) -> TableCounts {
        TableCounts {
            len: self.map.len() as u64,
            ..self.counts
        }
    }

    fn unlink(&mut self, i: u32) {
        let (p, n) = {
            let s = &self.slots[i as usize];
            (s.prev, s.next)
        };
        if p == NIL {
            self.head = n;
        } else {
            self.slots[p as usize].next = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.slots[n as usize].prev = p;
        }
    }

    fn push_front(&mut self, i: u32) {
        let old = self.head;
        {
            let s = &mut self.slots[i as usize];
            s.prev = NIL;
            s.next = old;
        }
        if old != NIL {
            self.slots[old as usize].prev = i;
        }
        self.head = i;
        if self.tail == NIL {
            self.tail = i;
        }
    }

    /// The slot of `key`.
    #[inline]
    fn find(&self, key: &K) -> Option<u32> {
        let slots = &self.slots;
        self.map
            .find(key.table_hash(), |&i| slots[i as usize].key == *key)
            .copied()
    }

    fn drop_slot(&mut self, i: u32) {
        self.unlink(i);
        let hash = self.slots[i as usize].key.table_hash();
        if let Ok(e) = self.map.find_entry(hash, |&j| j == i) {
            e.remove();
        }
        self.free.push(i);
    }

    /// Expire entries idle since before `now_ns - idle_ns` (oldest first, so this stops at
    /// the first live entry).
    pub fn expire(&mut self, now_ns: i64) {
        while self.tail != NIL {
            let t = self.tail;
            if now_ns.saturating_sub(self.slots[t as usize].last_ns) <= self.idle_ns {
                break;
            }
            self.drop_slot(t);
            self.counts.expired += 1;
        }
    }

    /// The entry of `key`, marked as used at `now_ns`.
    pub fn get_mut(&mut self, key: &K, now_ns: i64) -> Option<&mut V> {
        if self.head == NIL {
            return None;
        }
        let i = self.find(key)?;
        self.unlink(i);
        self.push_front(i);
        let s = &mut self.slots[i as usize];
        s.last_ns = s.last_ns.max(now_ns);
        Some(&mut s.value)
    }

    /// Whether `key` has an entry (not marking it used).
    pub fn contains(&self, key: &K) -> bool {
        self.head != NIL && self.find(key).is_some()
    }

    /// Insert or replace the entry of `key`, built by `make`. `make` is given the value the
    /// slot held, to reuse its buffers, and whether that value was `key`'s own (`true`) or
    /// another, ended entry's (`false`); `None` when the table keeps nothing.
    pub fn insert_with(
        &mut self,
        key: K,
        now_ns: i64,
        make: impl FnOnce(Option<V>, bool) -> V,
    ) -> Option<&mut V>
    where
        V: Default,
    {
        if self.cap == 0 {
            return None;
        }
        if let Some(i) = self.find(&key) {
            self.unlink(i);
            self.push_front(i);
            let s = &mut self.slots[i as usize];
            s.last_ns = now_ns;
            let old = std::mem::take(&mut s.value);
            s.value = make(Some(old), true);
            return Some(&mut s.value);
        }
        self.expire(now_ns);
        if self.map.len() >= self.cap && self.tail != NIL {
            let t = self.tail;
            self.drop_slot(t);
            self.counts.evicted += 1;
        }
        let i = match self.free.pop() {
            Some(i) => {
                let s = &mut self.slots[i as usize];
                s.key = key;
                s.last_ns = now_ns;
                let old = std::mem::take(&mut s.value);
                s.value = make(Some(old), false);
                i
            }
            None => {
                self.slots.push(Slot {
                    key,
                    last_ns: now_ns,
                    prev: NIL,
                    next: NIL,
                    value: make(None, false),
                });
                // Room for every slot on the free list, so ending entries never allocates.
                let room = self.slots.len();
                self.free.reserve(room - self.free.len());
                (self.slots.len() - 1) as u32
            }
        };
        let slots = &self.slots;
        self.map
            .insert_unique(key.table_hash(), i, |&j| slots[j as usize].key.table_hash());
        self.push_front(i);
        Some(&mut self.slots[i as usize].value)
    }

    /// Remove every entry, oldest first, after calling `f` on it.
    pub fn drain_oldest_first(&mut self, mut f: impl FnMut(&mut V)) {
        while self.tail != NIL {
            let t = self.tail;
            f(&mut self.slots[t as usize].value);
            self.drop_slot(t);
        }
    }

    /// Remove every entry (slots are kept for reuse; nothing is counted).
    pub fn clear(&mut self) {
        while self.tail != NIL {
            let t = self.tail;
            self.drop_slot(t);
        }
    }

    /// Remove the entry of `key` (its slot is kept for reuse).
    pub fn remove(&mut self, key: &K) {
        if let Some(i) = self.find(key) {
            self.drop_slot(i);
        }
    }
}
