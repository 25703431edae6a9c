/*
 * rogue_access_control: a CycloneDDS access control plugin that lets its participant create
 * any writer, whatever its permissions grant says, and otherwise is Debian's builtin plugin.
 *
 * A participant loaded with it behaves like a DDS implementation that skips its own writer
 * check (patched, or malicious): it announces writers its grant does not allow. The secured
 * tests use it with a real node's certificate and grant to check that convoy's *readers*
 * refuse such a writer (DDS Security's remote check against the writer's grant), while they
 * accept its writers on topics the grant allows.
 *
 * Cyclone configuration: <AccessControl><Library path=".../rogue_access_control.so"
 *   initFunction="init_rogue_access_control" finalizeFunction="finalize_rogue_access_control"/>
 * with the usual PermissionsCA, Governance and Permissions.
 */

#include <dlfcn.h>
#include <stdio.h>

#include "dds/security/dds_security_api.h"

#define BUILTIN_PLUGIN "/usr/lib/x86_64-linux-gnu/libddsc0debian/libdds_security_ac.so"

static plugin_init builtin_init;
static plugin_finalize builtin_finalize;

static DDS_Security_boolean any_writer (dds_security_access_control *instance,
                                        const DDS_Security_PermissionsHandle permissions_handle,
                                        const DDS_Security_DomainId domain_id,
                                        const DDS_Security_char *topic_name,
                                        const DDS_Security_Qos *writer_qos,
                                        const DDS_Security_PartitionQosPolicy *partition,
                                        const DDS_Security_DataTags *data_tag,
                                        DDS_Security_SecurityException *ex)
{
  (void) instance; (void) permissions_handle; (void) domain_id; (void) writer_qos;
  (void) partition; (void) data_tag; (void) ex;
  fprintf (stderr, "rogue_access_control: writer on %s allowed without a check\n", topic_name);
  return true;
}

int init_rogue_access_control (const char *argument, void **context, struct ddsi_domaingv *gv)
{
  void *builtin = dlopen (BUILTIN_PLUGIN, RTLD_NOW | RTLD_GLOBAL);
  if (builtin == NULL)
  {
    fprintf (stderr, "rogue_access_control: %s\n", dlerror ());
    return -1;
  }
  builtin_init = (plugin_init) dlsym (builtin, "init_access_control");
  builtin_finalize = (plugin_finalize) dlsym (builtin, "finalize_access_control");
  if (builtin_init == NULL || builtin_finalize == NULL)
  {
    fprintf (stderr, "rogue_access_control: %s lacks the plugin's functions\n", BUILTIN_PLUGIN);
    return -1;
  }
  int rc = builtin_init (argument, context, gv);
  if (rc == 0)
    ((dds_security_access_control *) *context)->check_create_datawriter = any_writer;
  return rc;
}

int finalize_rogue_access_control (void *context)
{
  return builtin_finalize (context);
}
