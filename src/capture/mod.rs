//! Live capture through libpcap: devices, the managed capture thread, queue policies, statistics.
