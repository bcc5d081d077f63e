#ifndef CLIBPQ_SHIM_H
#define CLIBPQ_SHIM_H
#include <libpq-fe.h>
#ifdef __linux__
// The I/O driver waits on every pooled connection's socket with one epoll set.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
#endif
